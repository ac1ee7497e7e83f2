package natsq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// Check implements queue.Backend: it reads the whole stream and the newest
// snapshot and writes nothing (its consumer is ephemeral). Every record's
// checksum, its subject, and the sequences are checked: above the newest
// snapshot they must be gapless; at or below it a compaction leaves each
// task's latest event and removes the rest. A stream cannot hold a torn
// record, so TornTail is always nil.
func (b *Backend) Check(ctx context.Context) (*queue.LogCheck, error) {
	rep := &queue.LogCheck{Location: b.Location()}
	ok, err := b.streamExists(ctx)
	if err != nil {
		return rep, err
	}
	if !ok {
		return rep, exitcode.Errorf(exitcode.NotFound, "queue %s: stream %s does not exist on %s", b.queue, b.stream, Redact(b.url))
	}
	ictx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	s, err := b.js.Stream(ictx, b.stream)
	cancel()
	if err != nil {
		return rep, b.serverErr("look up stream "+b.stream, err)
	}
	info := s.CachedInfo()
	rep.Notes = append(rep.Notes, fmt.Sprintf("stream %s: %d replica(s), file storage; how often it reaches the disk is the server's sync_interval setting (docs/artq-nats.md)", b.stream, info.Config.Replicas))

	snap, err := b.Snapshot(ctx)
	if err != nil {
		return rep, err
	}
	var base uint64
	if snap != nil {
		base = snap.Seq
		rep.SnapshotSeq = snap.Seq
	}
	_, refs, err := b.snapshots(ctx, false)
	if err != nil {
		return rep, err
	}
	for _, r := range refs {
		if !r.purged {
			rep.Notes = append(rep.Notes, r.name+": its compaction did not finish purging (the next compaction does)")
		}
	}

	// A cursor of its own: Check must not move Read's.
	st, err := b.streamState(ctx)
	if err != nil {
		return rep, b.serverErr("check "+b.stream, err)
	}
	rep.Bytes = int64(st.Bytes)
	c, err := b.newCursor(ctx, 1, false)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return rep, exitcode.Errorf(exitcode.NotFound, "queue %s: stream %s does not exist on %s", b.queue, b.stream, Redact(b.url))
		}
		return rep, b.serverErr("check "+b.stream, err)
	}
	defer c.close(b)
	var prev uint64
	holes := 0
	for rep.Events < int64(st.Msgs) {
		n := min(readBatch, int(int64(st.Msgs)-rep.Events))
		full, err := c.pull(ctx, b, n, false, b.opts.Timeout, func(d delivery) error {
			if d.seq <= prev {
				return nil
			}
			if d.seq != prev+1 && d.seq-1 > base {
				return &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: d.seq, Why: fmt.Sprintf("events %d to %d are missing and the newest snapshot is at %d", prev+1, d.seq-1, base)}
			}
			if d.seq != prev+1 {
				holes++
			}
			if _, err := b.decode(d.msg.Subject, d.seq, d.msg.Data); err != nil {
				return err
			}
			if rep.Events == 0 {
				rep.FirstSeq = d.seq
			}
			prev = d.seq
			rep.LastSeq = d.seq
			rep.Events++
			return nil
		})
		if err != nil {
			var se *stopErr
			if errors.As(err, &se) {
				return rep, se.err
			}
			return rep, b.serverErr("check "+b.stream, err)
		}
		if !full {
			return rep, b.serverErr("check "+b.stream, fmt.Errorf("the stream holds %d messages through %d but its consumer stopped at %d", st.Msgs, st.LastSeq, prev))
		}
	}
	if rep.Events == 0 {
		rep.FirstSeq, rep.LastSeq = base+1, base
	}
	if rep.LastSeq < base {
		return rep, &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: base, Why: fmt.Sprintf("the snapshot is at %d but the stream ends at %d", base, rep.LastSeq)}
	}
	if holes > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("events through %d were compacted into the snapshot; each task keeps its latest event", base))
	}
	if snap == nil && rep.FirstSeq > 1 {
		return rep, &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: rep.FirstSeq, Why: fmt.Sprintf("the stream starts at %d and there is no snapshot", rep.FirstSeq)}
	}
	return rep, nil
}
