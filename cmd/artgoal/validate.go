package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/jsonx"
)

// ValidateCmd checks a document without a store.
type ValidateCmd struct {
	File string `arg:"" name:"file" help:"Goal journal or GoalClosure document (- for stdin)."`
}

// Help shows an example.
func (c *ValidateCmd) Help() string {
	return `Checks a Goal journal (strict structure, every field's rules, and internal
consistency: receipts exactly for the phases before the current one, times in
order, a closure only when allowed) or a GoalClosure document, chosen by its
"kind". It reads no store, so it cannot judge history: 'put' does that.
Prints the document on success; exits 2 naming the first problem.

Example:
  artgoal validate ~/.local/state/art/goals/widget.json
  artgoal validate closure.json -o text`
}

// Run validates the document.
func (c *ValidateCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	data, err := readInput(std, c.File)
	if err != nil {
		return err
	}
	var meta jsonx.TypeMeta
	_ = json.Unmarshal(data, &meta) // only to choose the decoder; it decodes strictly
	if meta.Kind == goal.KindClosure {
		doc, err := goal.DecodeClosure(data)
		if err != nil {
			return err
		}
		if !g.JSON(std) {
			_, err = fmt.Fprintf(std.Out, "%s: valid %s\n", c.File, goal.KindClosure)
			return err
		}
		out, err := jsonx.MarshalIndent(doc)
		if err != nil {
			return err
		}
		_, err = std.Out.Write(out)
		return err
	}
	j, err := goal.DecodeJournal(data)
	if err != nil {
		return err
	}
	if !g.JSON(std) {
		_, err = fmt.Fprintf(std.Out, "%s: valid %s %s (revision %d, phase %s, %d of %d sealed)\n",
			c.File, goal.Kind, j.ID, j.Revision, j.Phase, len(j.Receipts), len(goal.Phases))
		return err
	}
	return printJournal(std, g, j)
}
