package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
)

// RedactCmd is the pure filter: Drafts in, Events out.
type RedactCmd struct {
	HMACFlag
	WrapFlags
}

// Help shows an example.
func (c *RedactCmd) Help() string {
	return `Reads Drafts (or, with --wrap, any JSON Lines) on stdin and writes the
redacted Events to stdout, one per line, touching no file: emit with only
the stdout sink. Sequence numbers count per subject from 1 within the run.

Example:
  artobs redact < drafts.jsonl | jq -c '{subject, seq, redaction}'
  HMAC_KEY=$(cat key) artobs redact --hmac-key-env HMAC_KEY < drafts.jsonl`
}

// Run filters.
func (c *RedactCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	noEvents := *g
	noEvents.Events = nil
	return emit(ctx, std, &noEvents, SinkFlags{Sink: []string{"stdout"}}, c.HMACFlag, c.WrapFlags)
}
