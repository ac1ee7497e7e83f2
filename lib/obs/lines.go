package obs

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Line is one line of input and its number (from 1).
type Line struct {
	N int
	B []byte
}

// Lines calls fn with the lines of r (without newlines, blank lines
// skipped) in batches: each call gets at least one line and at most max,
// all that had already arrived, so a busy stream is handled in bulk and a
// quiet one line by line without waiting. It returns when r ends, fn fails,
// or ctx is done. A line longer than MaxDraftBytes is a usage error naming
// its number.
//
// Reading happens in a goroutine so that a cancelled ctx (SIGINT while
// stdin is a quiet pipe) returns at once with context.Cause(ctx); that
// goroutine ends when r next returns (at the latest when the process
// exits). A final line without a newline is still a line.
func Lines(ctx context.Context, r io.Reader, name string, max int, fn func(batch []Line) error) error {
	type item struct {
		line    Line
		tooLong bool
		err     error
	}
	ch := make(chan item, 256)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 1<<16)
		for n := 1; ; n++ {
			line, size, tooLong, err := readLine(br, MaxDraftBytes)
			if size == 0 && err == io.EOF {
				return
			}
			if err == io.EOF {
				err = nil // a last line without newline
			}
			if !tooLong && err == nil && blank(line) {
				continue
			}
			select {
			case ch <- item{Line{n, line}, tooLong, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if max < 1 {
		max = 1
	}
	var batch []Line
	take := func(it item) error {
		if it.err != nil {
			return exitcode.Wrap(exitcode.Internal, fmt.Errorf("%s: %w", name, it.err))
		}
		if it.tooLong {
			return jsonx.Errorf(fmt.Sprintf("%s:%d", name, it.line.N), "line longer than %d bytes", MaxDraftBytes)
		}
		batch = append(batch, it.line)
		return nil
	}
	flush := func(err error) error {
		if len(batch) > 0 {
			if ferr := fn(batch); ferr != nil {
				return ferr
			}
			batch = batch[:0]
		}
		return err
	}
	for {
		var it item
		var ok bool
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case it, ok = <-ch:
		}
		if !ok {
			return nil
		}
		if err := take(it); err != nil {
			return flush(err)
		}
	more:
		for len(batch) < max {
			select {
			case it, ok = <-ch:
				if !ok {
					return flush(nil)
				}
				if err := take(it); err != nil {
					return flush(err)
				}
			default:
				break more
			}
		}
		if err := flush(nil); err != nil {
			return err
		}
	}
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// WrapPreset returns the Wrap for a known stream: "queue" for artq log
// records ({seq,time,type,task,attempt,…}), "agent" for artagent
// AgentEvents (subject agent/run, type agent.{type}, role brain), or
// "json" for anything else (subject and type must be given).
//
// The queue preset gives a task's records the subject and correlation the
// worker's own --events give them, queue/{queue}/task/{task} ({queue} is
// Fields["queue"], "default" unless the caller sets it: the records do not
// carry it), a record without a task the subject queue/{queue}, and the
// worker's type names (queue.claimed for started, queue.traced for trace),
// so one task's story is one subject whoever emitted it.
func WrapPreset(name string) (Wrap, error) {
	must := func(s string) Template {
		t, err := ParseTemplate(s)
		if err != nil {
			panic(err)
		}
		return t
	}
	switch name {
	case "queue":
		task := must("queue/{queue}/task/{task}")
		return Wrap{
			Subject: task, Correlation: task, SubjectElse: must("queue/{queue}"),
			Type: must("queue.{type}"), Role: RoleDispatcher, TimeField: "time",
			Fields: map[string]any{"queue": "default"},
			Types:  map[string]string{"queue.started": "queue.claimed", "queue.trace": "queue.traced"},
		}, nil
	case "agent":
		return Wrap{Subject: must("agent/run"), Type: must("agent.{type}"), Role: RoleBrain, TimeField: "time"}, nil
	case "json":
		return Wrap{TimeField: "time"}, nil
	}
	return Wrap{}, exitcode.Fieldf(exitcode.Usage, "Wrap", name, "%s %q: unknown preset (want queue, agent or json)", exitcode.Ref("Wrap"), name)
}
