package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/stateindex"
)

// FsckCmd checks the log.
type FsckCmd struct{}

// Help shows an example.
func (c *FsckCmd) Help() string {
	return `Reads the snapshot and every record: checksums, sequence numbers, and
every event through the state machine, and the state index status reads
(state.index) against that replay: a stale index is fine, one that
disagrees is corruption (remove it; writers rebuild it). On the file
backend it reads one moment of the queue (the snapshot, the log up to its
size then, and the index, pinned together), so appends and compactions
while it runs never make a healthy queue look corrupt. Writes nothing. Prints a QueueCheck
document (JSON) or a summary (text). Exit 0 when the log is sound (a torn
last record, left by a crash mid-append, is reported and is not an error:
the next writer cuts it and records that it did); exit 125 with the byte
offset on corruption; exit 4 when the queue directory does not exist.

Example:
  artq fsck
  artq fsck -o json | jq .torn_tail`
}

// Run checks.
func (c *FsckCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	b, err := f.open(g, true)
	if err != nil {
		return err
	}
	defer b.Close()
	var rep *queue.CheckReport
	if fb, ok := b.(*file.Backend); ok {
		// The snapshot, log and index read as of one moment: a live
		// queue is never reported corrupt.
		rep, err = stateindex.Fsck(ctx, fb)
	} else {
		rep, err = queue.Fsck(ctx, b)
	}
	if err != nil && !queue.IsCorrupt(err) {
		return err
	}
	if g.JSON(std) {
		if werr := writeJSONLine(std.Out, rep); werr != nil {
			return werr
		}
	} else {
		state := "ok"
		if !rep.OK {
			state = "CORRUPT"
		}
		fmt.Fprintf(std.Out, "%s: %s: %d tasks; log events %d..%d (%d events, %d bytes); snapshot through %d\n",
			rep.Location, state, rep.Tasks, rep.FirstSeq, rep.LastSeq, rep.Events, rep.Bytes, rep.SnapshotSeq)
		if rep.TornTail != nil {
			fmt.Fprintf(std.Out, "torn tail: %d bytes at byte %d (the next writer cuts it)\n", rep.TornTail.Bytes, rep.TornTail.Offset)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(std.Out, "note: %s\n", n)
		}
	}
	return err
}
