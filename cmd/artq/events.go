package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/otlp"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/queueobs"
)

// errEventsReadOnly: --events on a command that changes nothing.
var errEventsReadOnly = exitcode.Errorf(exitcode.Usage, "--events: this command only reads and records nothing; enqueue, cancel, retry, work and compact take --events")

// openEvents opens --events for a command that changes the queue, before
// the queue is opened: a bad sink spec is a usage error (exit 2) and
// touches nothing; a sink that cannot be opened is a warning, and the
// command runs without events (a sink never fails the work). stdout is
// refused where stdout carries the command's own output. An otlphttp://
// sink whose exporter program (artobs-otlp) is not installed is an error
// (exit 127) before the queue is opened. It returns a nil
// Observer without --events; close is never nil.
func openEvents(std cli.IO, g *cli.Globals, f *QueueFlags, role obs.Role, stdoutOK bool) (o *queueobs.Observer, close func(), err error) {
	o, _, close, err = openEventsTraced(std, g, f, role, stdoutOK)
	return o, close, err
}

// openEventsTraced is openEvents that also returns the OTLP exporter of an
// otlphttp:// sink (nil without one), whose tracer artq work makes spans
// with. The sinks are --events, else $ART_EVENTS.
func openEventsTraced(std cli.IO, g *cli.Globals, f *QueueFlags, role obs.Role, stdoutOK bool) (o *queueobs.Observer, exp *otlp.Exporter, close func(), err error) {
	none := func() {}
	specs := g.EventSinks()
	if len(specs) == 0 {
		return nil, nil, none, nil
	}
	if !stdoutOK && slices.Contains(specs, "stdout") {
		return nil, nil, none, exitcode.Errorf(exitcode.Usage, "--events stdout: stdout carries this command's output; use --events jsonl:PATH")
	}
	for _, spec := range specs {
		if _, _, err := obs.ParseSink(spec); err != nil {
			return nil, nil, none, err
		}
	}
	warn := obs.WarnTo("artq", std.Err)
	remote := &otlp.Remote{Options: otlp.Options{Service: "artq", Version: cli.Version(), Warn: warn, Find: clibase.Companion}}
	em, err := obs.Open(specs, obs.Options{Warn: warn, Stdout: std.Out, Remote: remote.Open})
	if err != nil {
		// A bad spec and a missing exporter program (an install
		// problem, not a passing failure) stop the command.
		if c := exitcode.Of(err); c == exitcode.Usage || c == exitcode.ProgramNotFound {
			return nil, nil, none, err
		}
		fmt.Fprintf(std.Err, "artq: warning: --events: %s (no events emitted)\n", strings.Join(strings.Fields(err.Error()), " "))
		return nil, nil, none, nil
	}
	return queueobs.NewObserver(em, f.name(g), role), remote.Exporter, func() { em.Close() }, nil
}

// name is the queue's name in correlation ids: --queue, or with --dir the
// directory's base name.
func (f *QueueFlags) name(g *cli.Globals) string {
	if g.Dir != "" {
		if abs, err := filepath.Abs(g.Dir); err == nil {
			return filepath.Base(abs)
		}
		return filepath.Base(g.Dir)
	}
	return f.Queue
}

// openObserved opens the queue's backend for a command that changes it,
// with its appends recorded by o (nil: not recorded).
func (f *QueueFlags) openObserved(g *cli.Globals, o *queueobs.Observer) (queue.Backend, error) {
	b, err := f.open(g, false)
	if err != nil {
		return nil, err
	}
	return o.Backend(b), nil
}
