package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/stateindex"
)

// CompactCmd snapshots the state.
type CompactCmd struct{}

// Help shows an example.
func (c *CompactCmd) Help() string {
	return `Writes the replayed state as snapshot.json (atomically), then atomically
replaces events.log with a new segment holding only the events after the
snapshot and a compacted event, and rewrites the state index status reads
(state.index). Replay then starts at the snapshot, so its
cost stays bounded however long the queue lives. A crash at any point
leaves a queue that replays to the same state. Safe to run from cron while
workers run; appends wait for it.

Example:
  artq compact
  0 3 * * *  artq compact --queue builds`
}

// Run compacts.
func (c *CompactCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	o, closeEvents, err := openEvents(std, g, f, obs.RoleOrchestrator, true)
	if err != nil {
		return err
	}
	defer closeEvents()
	b, err := f.open(g, false)
	if err != nil {
		return err
	}
	defer b.Close()
	q := queue.New(b)
	snap, err := q.Compact(ctx)
	if err != nil {
		return err
	}
	warnIndex(std, stateindex.WriteQueue(ctx, q))
	o.Emit(context.WithoutCancel(ctx), "", obs.Draft{Type: "queue.compacted", Time: snap.Time,
		Attrs: map[string]any{"through": snap.Seq, "tasks": len(snap.Tasks)}})
	fmt.Fprintf(std.Err, "artq: compacted: snapshot of %d tasks through event %d\n", len(snap.Tasks), snap.Seq)
	return nil
}
