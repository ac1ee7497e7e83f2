package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/queue"
)

// RetryCmd requeues a failed task.
type RetryCmd struct {
	ID string `arg:"" name:"id" help:"Task id."`
}

// Help shows an example.
func (c *RetryCmd) Help() string {
	return `Only a failed task with attempts left (attempts < max_attempts, set at
enqueue with --max-attempts) goes back to the queue, under its next attempt
number; anything else exits 3, an unknown task 4. Retries are never
automatic: artq does not guess that a command is safe to run again.

Example:
  artq enqueue --id build --max-attempts 3 -- make
  artq work --drain --allow make
  artq retry build && artq work --drain --allow make`
}

// Run retries.
func (c *RetryCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	return transition(ctx, std, g, f, c.ID, (*queue.Queue).Retry)
}
