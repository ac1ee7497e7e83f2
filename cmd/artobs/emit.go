package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// WrapFlags turn arbitrary JSON Lines into Drafts.
type WrapFlags struct {
	Wrap        string `name:"wrap" placeholder:"PRESET" enum:",queue,agent,json" default:"" help:"Read any JSON Lines instead of Drafts, each line becoming the attrs of one Draft: queue (artq log records: subject and correlation queue/NAME/task/{task} as the worker's --events give them, type queue.{type}), agent (artagent AgentEvents: subject agent/run, type agent.{type}) or json (give --subject and --type)."`
	Queue       string `name:"queue" placeholder:"NAME" default:"default" help:"With --wrap queue: the queue's name in subjects (queue/NAME/task/ID), as artq's --queue (records of artq log do not carry it)."`
	Subject     string `name:"subject" placeholder:"TEMPLATE" help:"With --wrap: the subject, with {field} or {a.b} filled from each record (e.g. 'task/{task}')."`
	Type        string `name:"type" placeholder:"TEMPLATE" help:"With --wrap: the event type template (e.g. 'queue.{type}')."`
	Correlation string `name:"correlation" placeholder:"TEMPLATE" help:"With --wrap: the correlation template."`
	Causation   string `name:"causation" placeholder:"TEMPLATE" help:"With --wrap: the causation template."`
	Role        string `name:"role" placeholder:"ROLE" enum:",brain,orchestrator,dispatcher,worker,runtime" default:"" help:"With --wrap: the role (brain, orchestrator, dispatcher, worker, runtime)."`
	TimeField   string `name:"time-field" placeholder:"FIELD" default:"time" help:"With --wrap: take the event time from this RFC 3339 field when present (so re-emitting a log gives the same ids); empty for the current time."`
}

func (f WrapFlags) wrap() (*obs.Wrap, error) {
	if f.Wrap == "" {
		if f.Subject != "" || f.Type != "" || f.Correlation != "" || f.Causation != "" || f.Role != "" || f.Queue != "default" {
			return nil, exitcode.Errorf(exitcode.Usage, "--subject, --type, --correlation, --causation, --role and --queue need --wrap (Drafts carry their own)")
		}
		return nil, nil
	}
	w, err := obs.WrapPreset(f.Wrap)
	if err != nil {
		return nil, err
	}
	if f.Queue != "default" {
		if f.Wrap != "queue" {
			return nil, exitcode.Errorf(exitcode.Usage, "--queue %s: only --wrap queue names a queue", f.Queue)
		}
		if f.Queue == "" || strings.ContainsAny(f.Queue, "/{}") {
			return nil, exitcode.Errorf(exitcode.Usage, "--queue %q: want a queue name (no /, { or })", f.Queue)
		}
		w.Fields = map[string]any{"queue": f.Queue}
	}
	if f.Subject != "" {
		// The caller's subject replaces the preset's whole: its
		// fallback and its correlation (unless given too).
		w.SubjectElse, w.Correlation = obs.Template{}, obs.Template{}
	}
	if f.Type != "" {
		w.Types = nil
	}
	for _, t := range []struct {
		src  string
		dst  *obs.Template
		flag string
	}{{f.Subject, &w.Subject, "subject"}, {f.Type, &w.Type, "type"}, {f.Correlation, &w.Correlation, "correlation"}, {f.Causation, &w.Causation, "causation"}} {
		if t.src == "" {
			continue
		}
		tp, err := obs.ParseTemplate(t.src)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--%s: %w", t.flag, err))
		}
		*t.dst = tp
	}
	if w.Subject.IsZero() || w.Type.IsZero() {
		return nil, exitcode.Errorf(exitcode.Usage, "--wrap %s needs --subject and --type", f.Wrap)
	}
	if f.Role != "" {
		w.Role = obs.Role(f.Role)
	}
	w.TimeField = f.TimeField
	return &w, nil
}

// batchLines bounds how many already-arrived lines go to the sinks in one
// write.
const batchLines = 256

// EmitCmd reads Drafts and delivers Events.
type EmitCmd struct {
	SinkFlags
	HMACFlag
	WrapFlags
}

// Help shows examples.
func (c *EmitCmd) Help() string {
	return `Reads one Draft per line on stdin ({"apiVersion":"art/v1alpha1","kind":"Draft",
"subject":…,"type":…,"attrs":{…}}), redacts it, gives it the next sequence
number of its subject and delivers the Event to every sink. Lines are
handled as they arrive, so a following pipe works (artq log --follow).

A Draft that is not valid (duplicate keys, NaN, an integer beyond 2^53, an
unknown field) stops the run with exit 2, naming its line; the lines before
it were delivered. A sink that fails stops the run (exit 125; 126 for a
refused path such as a symlink). With --wrap, any JSON Lines are accepted.

Example:
  echo '{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/1","type":"task.started","attrs":{"token":"s3cr3t"}}' |
    artobs emit --sink jsonl:events.jsonl --sink stdout
  artq log | artobs emit --wrap queue --sink jsonl:events.jsonl
  artagent run … | artobs emit --wrap agent --subject agent/fix-vet --sink jsonl:events.jsonl
  some-tool --json | artobs emit --wrap json --subject 'build/{id}' --type 'build.{event}' --sync --sink jsonl:events.jsonl`
}

// Run emits.
func (c *EmitCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	return emit(ctx, std, g, c.SinkFlags, c.HMACFlag, c.WrapFlags)
}

func emit(ctx context.Context, std cli.IO, g *cli.Globals, sf SinkFlags, hf HMACFlag, wf WrapFlags) error {
	w, err := wf.wrap()
	if err != nil {
		return err
	}
	key, err := hf.key()
	if err != nil {
		return err
	}
	// Wrapped records that carry their time give the same envelopes when
	// emitted again: let the sink keep them once.
	em, err := sf.open(std, g, key, w != nil && w.TimeField != "")
	if err != nil {
		return err
	}
	decode := func(line []byte) (obs.Draft, error) {
		if w != nil {
			return w.Draft(line)
		}
		p, err := obs.DecodeDraft(line)
		if err != nil {
			return obs.Draft{}, err
		}
		return *p, nil
	}
	err = obs.Lines(ctx, std.In, "stdin", batchLines, func(batch []obs.Line) error {
		drafts := make([]obs.Draft, 0, len(batch))
		var bad error // an invalid line: the lines before it are still emitted
		for _, l := range batch {
			d, err := decode(l.B)
			if err != nil {
				bad = exitcode.Wrap(exitcode.Of(err), fmt.Errorf("stdin:%d: %w", l.N, err))
				break
			}
			drafts = append(drafts, d)
		}
		for k, del := range em.EmitBatch(ctx, drafts) {
			if del.Err != nil {
				return exitcode.Wrap(exitcode.Of(del.Err), fmt.Errorf("stdin:%d: %w", batch[k].N, del.Err))
			}
		}
		return bad
	})
	if cerr := em.Close(); err == nil {
		err = cerr
	}
	return err
}
