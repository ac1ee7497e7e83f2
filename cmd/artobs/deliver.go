package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// DeliverCmd appends existing Events to sinks.
type DeliverCmd struct {
	SinkFlags
}

// Help shows an example.
func (c *DeliverCmd) Help() string {
	return `Reads Events (one per line, as emit, redact or a JSONL sink hold them) and
appends each to every sink that does not hold it yet: delivering the same
events twice writes them once. Each id is recomputed from the content
(a mismatch exits 2), and an event that redaction would still change is
refused (exit 2): deliver never lets an unredacted value into a sink. An
event older than what a sink holds for its subject exits 3.

Example:
  artobs redact < drafts.jsonl > events.jsonl
  artobs deliver --sink jsonl:archive.jsonl < events.jsonl
  artobs deliver --sink jsonl:archive.jsonl < events.jsonl   # again: nothing new written`
}

// Run delivers.
func (c *DeliverCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	em, err := c.open(std, g, nil)
	if err != nil {
		return err
	}
	err = obs.Lines(ctx, std.In, "stdin", func(n int, line []byte) error {
		env, _, err := obs.ParseEnvelope(line)
		if err != nil {
			return exitcode.Wrap(exitcode.Of(err), fmt.Errorf("stdin:%d: %w", n, err))
		}
		if d := em.Deliver(ctx, env); d.Err != nil {
			return exitcode.Wrap(exitcode.Of(d.Err), fmt.Errorf("stdin:%d: %w", n, d.Err))
		}
		return nil
	})
	if cerr := em.Close(); err == nil {
		err = cerr
	}
	return err
}
