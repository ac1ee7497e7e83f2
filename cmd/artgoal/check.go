package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
)

// CheckCmd adds evidence to a checklist item.
type CheckCmd struct {
	ID       string `arg:"" name:"id" help:"Goal id."`
	Rev      int64  `name:"rev" required:"" placeholder:"N" help:"The revision this change is based on (optimistic lock; a stale one exits 3)."`
	Item     string `name:"item" required:"" placeholder:"K" help:"Checklist item: 0-based index or id."`
	Evidence string `name:"evidence" required:"" placeholder:"TYPE:REF" help:"The evidence (see below)."`
	Note     string `name:"note" placeholder:"S" help:"A comment kept with the evidence."`
	SourceFlags
}

// Help shows the evidence syntax and an example.
func (c *CheckCmd) Help() string {
	return `Appends one piece of evidence to a checklist item and prints the new journal
(revision N+1). Evidence is append-only: it can be added, never removed.

Evidence is ` + evidenceSyntax() + `
` + verifiedEvidence + `

Example:
  artgoal check widget --rev 3 --item c0 --evidence 'command:0:go test ./...'
  artgoal check widget --rev 4 --item 1 --evidence file:docs/widget.md --note 'reviewed by ana'
  artgoal check widget --rev 5 --item c0 --evidence task:build      # read from the default artq queue
  artgoal check widget --rev 6 --item c0 --evidence "event:$id" --event-sink events.jsonl`
}

// Run appends the evidence.
func (c *CheckCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := openSession(ctx, std, g, &c.SourceFlags)
	if err != nil {
		return err
	}
	defer s.release()
	evs, err := parseEvidence([]string{c.Evidence})
	if err != nil {
		return err
	}
	evs[0].Note = c.Note
	j, err := s.Check(c.ID, c.Rev, c.Item, evs[0])
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
