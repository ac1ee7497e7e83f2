package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
)

// ReceiptCmd seals the current phase.
type ReceiptCmd struct {
	ID       string   `arg:"" name:"id" help:"Goal id."`
	Rev      int64    `name:"rev" required:"" placeholder:"N" help:"The revision this change is based on (optimistic lock; a stale one exits 3)."`
	Summary  string   `name:"summary" required:"" placeholder:"S" help:"What this phase did and found."`
	Evidence []string `name:"evidence" required:"" sep:"none" placeholder:"TYPE:REF" help:"Evidence for the receipt (repeatable, at least one)."`
	SourceFlags
}

// Help shows the phase order and an example.
func (c *ReceiptCmd) Help() string {
	return `Seals the current phase with a receipt (summary, evidence, sealed_at) and
advances to the next one: frame, explore, design, plan, build, verify, review,
deliver. Sealing deliver leaves the phase at deliver; after it only 'close'
is accepted. A sealed receipt can never be rewritten.

Evidence is ` + evidenceSyntax() + `
` + verifiedEvidence + `

Example:
  artgoal receipt widget --rev 1 --summary 'framed: users need X' --evidence note:'interview notes in docs/'
  artgoal receipt widget --rev 2 --summary 'explored the code' --evidence file:notes/explore.md
  artgoal receipt widget --rev 7 --summary 'built' --evidence task:build --queue-dir /srv/q --evidence task:lint`
}

// Run seals the phase.
func (c *ReceiptCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := openSession(ctx, std, g, &c.SourceFlags)
	if err != nil {
		return err
	}
	defer s.release()
	evs, err := parseEvidence(c.Evidence)
	if err != nil {
		return err
	}
	j, err := s.Seal(c.ID, c.Rev, c.Summary, evs)
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
