package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/goal"
)

// PutCmd stores a caller-supplied successor.
type PutCmd struct {
	ID   string `arg:"" name:"id" help:"Goal id."`
	Rev  int64  `name:"rev" required:"" placeholder:"N" help:"The revision the document was derived from (optimistic lock; a stale one exits 3)."`
	File string `name:"file" required:"" placeholder:"F" help:"Goal journal (JSON; - for stdin)."`
	SourceFlags
}

// Help shows the rules and an example.
func (c *PutCmd) Help() string {
	return `Replaces the goal with the journal in F if it is a legitimate successor of
revision N: the honest way to script arbitrary edits. The document keeps
revision N (and N's updated_at, or omits it); the store writes N+1.

Allowed: appending evidence (to items or sealed receipts), appending checklist
items, sealing the current phase (advancing by one), closing. Timestamps of
what is added may be omitted; the store stamps them.
Refused (exit 3, file untouched): changing id, title, created_at or non-goals;
skipping or reverting a phase; rewriting a sealed receipt; removing or
editing evidence or checklist items; backdating; anything after closure.
An invalid document (unknown field, bad value) exits 2.

Task and event evidence the document appends is verified like check's (see
'artgoal check --help'); from_queue and from_sink are artgoal's own records
of that check and are replaced by what it reads. Evidence already in
revision N is history and is not checked again.

Example:
  artgoal show widget > j.json
  jq '.checklist += [{"id": "perf", "text": "p99 under 5 ms", "evidence": []}]' j.json > j2.json
  artgoal put widget --rev "$(jq .revision j.json)" --file j2.json`
}

// Run stores the successor.
func (c *PutCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := openSession(ctx, std, g, &c.SourceFlags)
	if err != nil {
		return err
	}
	defer s.release()
	data, err := readInput(std, c.File)
	if err != nil {
		return err
	}
	doc, err := goal.DecodeDraft(data)
	if err != nil {
		return err
	}
	j, err := s.Put(c.ID, c.Rev, doc)
	if err != nil {
		return err
	}
	return printJournal(std, g, j)
}
