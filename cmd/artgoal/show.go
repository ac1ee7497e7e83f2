package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
)

// ShowCmd prints one goal.
type ShowCmd struct {
	ID string `arg:"" name:"id" help:"Goal id."`
}

// Help shows an example.
func (c *ShowCmd) Help() string {
	return `Prints the journal exactly as stored (JSON), or a readable view of its
phases and checklist with -o text. A missing goal exits 4.

Example:
  artgoal show widget -o text
  rev=$(artgoal show widget | jq .revision)`
}

// Run prints the journal.
func (c *ShowCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := store(g)
	if err != nil {
		return err
	}
	j, err := s.Get(c.ID)
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
