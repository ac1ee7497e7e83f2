// Command artq is a crash-safe task queue for shell scripts and cron: its
// whole state is the replay of an append-only, fsync'd event log, and its
// worker runs each task through the bounded runner (lib/execx). All
// behaviour lives in lib/queue; this is its CLI.
package main

import (
	"os"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
)

// CLI is artq's grammar (docs/artq.md).
type CLI struct {
	cli.Globals
	QueueFlags

	Enqueue    EnqueueCmd        `cmd:"" help:"Add a task: PROGRAM ARGS after --, a Task manifest, or a batch of them."`
	Cancel     CancelCmd         `cmd:"" help:"Cancel a task: a queued one at once, a running one through its worker."`
	Retry      RetryCmd          `cmd:"" help:"Requeue a failed task that has attempts left."`
	Status     StatusCmd         `cmd:"" help:"Show tasks: TaskStatus JSON, or a table on a terminal."`
	Log        LogCmd            `cmd:"" help:"Print the event log as QueueEvent JSON Lines."`
	Fsck       FsckCmd           `cmd:"" help:"Check the log and snapshot without writing anything."`
	Compact    CompactCmd        `cmd:"" help:"Write a snapshot and start a new log segment."`
	Work       WorkCmd           `cmd:"" help:"Run queued tasks through the bounded runner."`
	Queues     QueuesCmd         `cmd:"" help:"List the queues that exist."`
	Completion cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	os.Exit(run())
}

const description = "A crash-safe task queue on an append-only, fsync'd event log."

func run() int {
	c := &CLI{}
	return cli.Main("artq", description, c, options(c)...)
}

func options(c *CLI) []kong.Option {
	return []kong.Option{
		kong.Bind(&c.QueueFlags),
		kong.ValueFormatter(func(v *kong.Value) string {
			if v.Name == "dir" {
				// In artq --dir is the queue's own directory (docs/artq.md),
				// not the state home it is in the other tools.
				return "Queue directory (default: $ART_HOME/queues/NAME, else $XDG_STATE_HOME/art/queues/NAME, else ~/.local/state/art/queues/NAME)."
			}
			return kong.DefaultHelpValueFormatter(v)
		}),
	}
}
