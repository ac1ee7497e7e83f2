package main

import (
	"context"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/goal"
)

// NewCmd creates a goal.
type NewCmd struct {
	ID      string   `arg:"" name:"id" help:"Goal id: the journal's file name (${idrule})."`
	Title   string   `name:"title" required:"" help:"What the goal is, in one line."`
	NonGoal []string `name:"non-goal" sep:"none" placeholder:"S" help:"Something this goal will not do (repeatable; fixed once created)."`
	Check   []string `name:"check" sep:"none" placeholder:"S" help:"An acceptance checklist item (repeatable); items get ids c0, c1, …"`
}

// Help shows an example.
func (c *NewCmd) Help() string {
	return `Creates DIR/goals/ID.json at revision 1, phase frame, and prints the journal.
An existing id is refused (exit 3).

Example:
  artgoal new widget --title 'Ship the widget' \
      --non-goal 'no UI redesign' \
      --check 'unit tests pass' --check 'docs updated'`
}

// Run creates the genesis journal.
func (c *NewCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := openSession(ctx, std, g, nil)
	if err != nil {
		return err
	}
	defer s.release()
	j, err := goal.New(c.ID, c.Title, c.NonGoal, c.Check, time.Now())
	if err != nil {
		return err
	}
	j, err = s.Create(j)
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
