package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/queue"
)

// LogCmd prints the event log.
type LogCmd struct {
	Follow bool   `name:"follow" short:"f" help:"Keep printing events as they are appended, until interrupted."`
	After  uint64 `name:"after" placeholder:"SEQ" help:"Start after event SEQ (to resume a pipeline where it stopped)."`
}

// Help shows an example.
func (c *LogCmd) Help() string {
	return `Prints each event as a QueueEvent document, one JSON line each, in log
order. Traces carry metadata only (status, exit code, signal, duration,
output byte counts, truncation), never arguments or output. Events folded
into a snapshot by 'artq compact' are no longer in the log: read from the
start, a note on stderr says which. A reader never skips events silently:
if the events after --after SEQ, or after what --follow has printed, were
compacted before it read them (it fell behind compaction), it stops with
exit 3 naming them. Only reads: it writes nothing, not even a lock file.
--follow exits 130 when interrupted.

Example:
  artq log | jq -c 'select(.type == "failed")'
  artq log --follow --after "$last_seq" | artobs emit --sink jsonl:events.jsonl`
}

// Run prints events.
func (c *LogCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	b, err := f.open(g, true)
	if err != nil {
		return err
	}
	defer b.Close()
	w := bufio.NewWriterSize(std.Out, 1<<16)
	defer w.Flush()
	var line []byte
	return queue.Follow(ctx, b, queue.FollowOptions{
		After:  c.After,
		Follow: c.Follow,
		Skipped: func(from, to uint64) {
			fmt.Fprintf(std.Err, "artq: events %d to %d were compacted into the snapshot\n", from, to)
		},
		Idle: w.Flush,
	}, func(ev *queue.Event) error {
		line = queue.AppendEventDoc(line[:0], ev)
		line = append(line, '\n')
		_, err := w.Write(line)
		return err
	})
}
