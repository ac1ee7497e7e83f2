package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
)

// CancelCmd cancels a task.
type CancelCmd struct {
	ID string `arg:"" name:"id" help:"Task id."`
}

// Help shows an example.
func (c *CancelCmd) Help() string {
	return `A queued task is cancelled at once. A running task gets a cancel request;
its worker sees it within one --poll, kills the task's process group and
records the task as cancelled (if the task finished first, its own result
stands). If the task's worker is gone, the task is recovered on the spot.
Cancelling again while the request is pending succeeds and changes nothing.
A finished task exits 3; an unknown one exits 4. Prints the TaskStatus.

Example:
  artq cancel nightly-2026-11-30
  artq status nightly-2026-11-30 --watch   # until it is cancelled`
}

// Run cancels.
func (c *CancelCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	return transition(ctx, std, g, f, c.ID, (*queue.Queue).Cancel)
}

// transition runs one request on one task (cancel, retry) with the events
// the flags ask for, and prints the task's new status.
func transition(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags, id string,
	op func(*queue.Queue, context.Context, string) (queue.TaskStatus, error)) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	if err := queue.ValidName("id", id); err != nil {
		return err
	}
	o, closeEvents, err := openEvents(std, g, f, obs.RoleDispatcher, false)
	if err != nil {
		return err
	}
	defer closeEvents()
	b, err := f.openObserved(g, o)
	if err != nil {
		return err
	}
	defer b.Close()
	ts, err := op(queue.New(b), ctx, id)
	if err != nil {
		return err
	}
	return printOne(std, g, ts)
}

// printOne prints one status: JSON, or "ID: STATE" for a terminal.
func printOne(std cli.IO, g *cli.Globals, ts queue.TaskStatus) error {
	if g.JSON(std) {
		return writeJSONLine(std.Out, &ts)
	}
	state := string(ts.State)
	if ts.CancelRequested {
		state = "running, cancel requested"
	}
	_, err := fmt.Fprintf(std.Out, "%s: %s (%d/%d attempts)\n", ts.ID, state, ts.Attempts, ts.MaxAttempts)
	return err
}
