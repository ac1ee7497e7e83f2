package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/evidence"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/goal/goalobs"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue/file"
)

// store opens the goal store under the state home, for reads. Reads emit
// no events, so --events changes nothing for them.
func store(g *cli.Globals) (*goal.Store, error) {
	home, err := g.Home()
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return goal.NewStore(home), nil
}

// SourceFlags choose where task and event evidence is verified: the artq
// queue and the artobs JSONL sink (docs/artgoal.md).
type SourceFlags struct {
	Queue     string `name:"queue" default:"default" env:"ART_QUEUE" placeholder:"NAME" help:"The artq queue task:ID evidence is read from: STATE_HOME/queues/NAME, as artq --queue."`
	QueueDir  string `name:"queue-dir" placeholder:"DIR" help:"The artq queue directory instead (artq's --dir); --queue is then ignored."`
	EventSink string `name:"event-sink" placeholder:"PATH" help:"The artobs JSONL file event:ID evidence is found and verified in (default: the first --events jsonl:PATH)."`
}

// eventSink is --event-sink, else the first --events jsonl:PATH: in a
// pipeline that writes every tool's events to one file, the events a goal
// cites are in the file it records its own events in.
func (f *SourceFlags) eventSink(g *cli.Globals) string {
	if f.EventSink != "" {
		return f.EventSink
	}
	for _, spec := range g.Events {
		if kind, path, err := obs.ParseSink(spec); err == nil && kind == "jsonl" {
			return path
		}
	}
	return ""
}

const eventSinkHint = "event evidence is checked in the artobs JSONL file that holds it: give --event-sink PATH (or --events jsonl:PATH)"

// session is what a mutation runs with: the goal store, verifying task and
// event evidence against the queue and the sink when the command takes
// evidence, wrapped so that every mutation is also recorded on the --events
// sinks.
type session struct {
	*goal.Store
	Emitter *obs.Emitter
	src     *evidence.Sources
}

// openSession checks --events (a malformed spec, or stdout, which carries
// the journal, is a usage error: exit 2 before anything is done) and opens
// the sinks; one that cannot be opened is a warning and the work goes on
// without it (docs/architecture.md, "How the pieces compose": a sink failure never fails the work). sources
// is nil for mutations that take no evidence.
func openSession(ctx context.Context, std cli.IO, g *cli.Globals, sources *SourceFlags) (*session, error) {
	for _, spec := range g.Events {
		kind, _, err := obs.ParseSink(spec)
		if err != nil {
			return nil, err
		}
		if kind == "stdout" {
			return nil, exitcode.WithHint(exitcode.Errorf(exitcode.Usage, "--events stdout: stdout carries the journal artgoal prints"),
				"write the events to a file with --events jsonl:PATH, and follow it with 'artobs tail PATH --follow'")
		}
	}
	home, err := g.Home()
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	s := &session{Store: goal.NewStore(home)}
	if sources != nil {
		s.src = &evidence.Sources{
			Ctx:      ctx,
			Queue:    file.Location{Queue: sources.Queue, Dir: sources.QueueDir, Home: home},
			Sink:     sources.eventSink(g),
			SinkHint: eventSinkHint,
		}
		s.Store.Sources = s.src
	}
	if len(g.Events) > 0 {
		warn := obs.WarnTo("artgoal", std.Err)
		em, err := obs.Open(g.Events, obs.Options{Warn: warn, Stdout: std.Out})
		if err != nil {
			warn(fmt.Errorf("--events: %w (no events emitted)", err))
		} else {
			s.Emitter = em
			s.OnUpdate = goalobs.Hook(ctx, em, "")
		}
	}
	return s, nil
}

// release closes the sinks and the queue.
func (s *session) release() {
	if s.Emitter != nil {
		s.Emitter.Close()
	}
	if s.src != nil {
		s.src.Close()
	}
}

// printJournal writes j as its canonical JSON (the bytes the store holds)
// or, for -o text, as the human view.
func printJournal(std cli.IO, g *cli.Globals, j *goal.Journal) error {
	if !g.JSON(std) {
		return goal.WriteText(std.Out, j)
	}
	data, err := j.Marshal()
	if err != nil {
		return err
	}
	_, err = std.Out.Write(data)
	return err
}

// parseEvidence parses every TYPE:REF and attaches a hint with the syntax.
func parseEvidence(specs []string) ([]goal.Evidence, error) {
	out := make([]goal.Evidence, 0, len(specs))
	for _, s := range specs {
		e, err := goal.ParseEvidence(s)
		if err != nil {
			return nil, exitcode.WithHint(err, "evidence is TYPE:REF with TYPE one of command, file, task, event, url, note (see --help)")
		}
		out = append(out, e)
	}
	return out, nil
}

// readInput reads a document from a file, or from stdin for "-".
func readInput(std cli.IO, name string) ([]byte, error) {
	if name == "-" {
		return goal.ReadLimited(std.In, "standard input")
	}
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.Errorf(exitcode.NotFound, "%s: no such file", name)
		}
		return nil, exitcode.Errorf(exitcode.Usage, "%w", err)
	}
	defer f.Close()
	return goal.ReadLimited(f, name)
}

// cancelled stops before any work when the context is already done.
func cancelled(ctx context.Context) error {
	if ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil {
			return c
		}
		return ctx.Err()
	}
	return nil
}

// verifiedEvidence explains the checks of task and event evidence.
const verifiedEvidence = `
Task and event evidence is checked before anything is written, and the
journal records what was read (from_queue, from_sink), not the caller's word:
  task:ID   the task is read from the artq queue (--queue NAME, by default
            "default", or --queue-dir DIR), without writing to it. Its state
            must be final: succeeded, failed or cancelled. A task that is
            queued or running exits 3, and so does task:ID=STATE when the
            queue holds another state; an unknown task or queue exits 4.
  event:ID  the record is found in the artobs JSONL file (--event-sink PATH,
            default the first --events jsonl:PATH) and its id recomputed
            from its content. An unknown id exits 4, a record that does not
            verify 125, no file to look in 2.`

// evidenceSyntax is the evidence forms, indented for help text.
func evidenceSyntax() string { return goal.EvidenceSyntax }
