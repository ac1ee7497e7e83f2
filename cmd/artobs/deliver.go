package main

import (
	"context"
	"errors"
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
	em, err := c.open(std, g, nil, false)
	if err != nil {
		return err
	}
	var conflicts int
	var firstConflict error
	err = obs.Lines(ctx, std.In, "stdin", batchLines, func(batch []obs.Line) error {
		envs := make([]*obs.Envelope, 0, len(batch))
		var bad error // an invalid line: the lines before it are still delivered
		for _, l := range batch {
			env, _, err := obs.ParseEnvelope(l.B)
			if err != nil {
				bad = exitcode.Wrap(exitcode.Of(err), fmt.Errorf("stdin:%d: %w", l.N, err))
				break
			}
			envs = append(envs, env)
		}
		for k, d := range em.DeliverBatch(ctx, envs) {
			switch {
			case d.Err == nil:
			case errors.Is(d.Err, obs.ErrStale):
				// A conflict: report it, deliver the rest.
				conflicts++
				if firstConflict == nil {
					firstConflict = fmt.Errorf("stdin:%d: %w", batch[k].N, d.Err)
				}
			default:
				return exitcode.Wrap(exitcode.Of(d.Err), fmt.Errorf("stdin:%d: %w", batch[k].N, d.Err))
			}
		}
		return bad
	})
	if err == nil && firstConflict != nil {
		err = exitcode.Wrap(exitcode.Conflict, fmt.Errorf("%d event(s) not delivered, first %w", conflicts, firstConflict))
	}
	if cerr := em.Close(); err == nil {
		err = cerr
	}
	return err
}
