package obs

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Lines calls fn with each line of r (without its newline, blank lines
// skipped), numbered from 1, until r ends, fn fails, or ctx is done. A line
// longer than MaxDraftBytes is a usage error naming its number.
//
// Reading happens in a goroutine so that a cancelled ctx (SIGINT while
// stdin is a quiet pipe) returns at once with context.Cause(ctx); that
// goroutine ends when r next returns (at the latest when the process
// exits). A final line without a newline is still a line.
func Lines(ctx context.Context, r io.Reader, name string, fn func(n int, line []byte) error) error {
	type item struct {
		line    []byte
		tooLong bool
		err     error
	}
	ch := make(chan item, 64)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 1<<16)
		for {
			line, n, tooLong, err := readLine(br, MaxDraftBytes)
			if n == 0 && err == io.EOF {
				return
			}
			if err == io.EOF {
				err = nil // a last line without newline
			}
			select {
			case ch <- item{line, tooLong, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for n := 1; ; n++ {
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
		if it.err != nil {
			return exitcode.Wrap(exitcode.Internal, fmt.Errorf("%s: %w", name, it.err))
		}
		if it.tooLong {
			return jsonx.Errorf(fmt.Sprintf("%s:%d", name, n), "line longer than %d bytes", MaxDraftBytes)
		}
		if blank(it.line) {
			continue
		}
		if err := fn(n, it.line); err != nil {
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
// records ({seq,time,type,task,attempt,…}: subject task/{task}, type
// queue.{type}, role dispatcher), "agent" for artagent AgentEvents (subject
// agent/run, type agent.{type}, role brain), or "json" for anything else
// (subject and type must be given).
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
		return Wrap{Subject: must("task/{task}"), Type: must("queue.{type}"), Role: RoleDispatcher, TimeField: "time"}, nil
	case "agent":
		return Wrap{Subject: must("agent/run"), Type: must("agent.{type}"), Role: RoleBrain, TimeField: "time"}, nil
	case "json":
		return Wrap{TimeField: "time"}, nil
	}
	return Wrap{}, exitcode.Errorf(exitcode.Usage, "--wrap %q: unknown preset (want queue, agent or json)", name)
}
