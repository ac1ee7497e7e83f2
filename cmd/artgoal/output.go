package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
)

// store opens the goal store under the state home. --events is accepted
// (every tool has it) but artgoal emits no events until the lib/obs
// integration lands; it says so rather than dropping the request silently,
// and, like any sink problem, that never fails the work.
func store(std cli.IO, g *cli.Globals) (*goal.Store, error) {
	if len(g.Events) > 0 {
		fmt.Fprintf(std.Err, "artgoal: warning: --events is not wired yet: no events are emitted\n")
	}
	home, err := g.Home()
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return goal.NewStore(home), nil
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
			return nil, hinted{err, "evidence is TYPE:REF with TYPE one of command, file, task, event, url, note (see --help)"}
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

// hinted adds a hint line to an error without changing its message or code.
type hinted struct {
	error
	hint string
}

func (h hinted) Unwrap() error { return h.error }
func (h hinted) Hint() string  { return h.hint }

// evidenceSyntax is the evidence forms, indented for help text.
func evidenceSyntax() string { return goal.EvidenceSyntax }
