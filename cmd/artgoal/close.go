package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/goal"
)

// CloseCmd closes a goal.
type CloseCmd struct {
	ID      string `arg:"" name:"id" help:"Goal id."`
	Rev     int64  `name:"rev" required:"" placeholder:"N" help:"The revision this change is based on (optimistic lock; a stale one exits 3)."`
	Closure string `name:"closure" required:"" placeholder:"FILE" help:"GoalClosure document (JSON; - for stdin)."`
}

// Help shows the closure document and an example.
func (c *CloseCmd) Help() string {
	return `Records the closure and prints the closed journal. Refused (exit 3) unless all
eight phases are sealed and every checklist item has evidence; afterwards
every mutation of the goal is refused (exit 3).

The closure document (schemas/goal-closure.schema.json) is strict: unknown
fields exit 2; cleanup, debt, risks and next must be present ([] for none).

Example:
  cat > closure.json <<'JSON'
  {"apiVersion": "art/v1alpha1", "kind": "GoalClosure",
   "outcome": "widget shipped in v1.2",
   "cleanup": ["deleted the spike branch"],
   "debt": [{"kind": "test", "text": "no test on darwin"}],
   "risks": [{"severity": "low", "text": "slow on huge inputs", "mitigation": "documented limit"}],
   "next": [{"title": "widget v2", "goal": "widget-v2"}]}
  JSON
  artgoal close widget --rev 12 --closure closure.json`
}

// Run closes the goal.
func (c *CloseCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := openSession(ctx, std, g, nil)
	if err != nil {
		return err
	}
	defer s.release()
	data, err := readInput(std, c.Closure)
	if err != nil {
		return err
	}
	doc, err := goal.DecodeClosure(data)
	if err != nil {
		return err
	}
	j, err := s.Close(c.ID, c.Rev, doc)
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
