package natsq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// Snapshots live in an object store, one object per snapshot, named by its
// sequence (snapshot-00000000000000001234), so that two compactions never
// overwrite each other and the newest is simply the highest name. An object
// is complete once its metadata is published (the object store writes the
// chunks first), so a crash while writing one leaves the previous newest in
// place.
//
// Compaction, each step acknowledged before the next:
//
//  1. the snapshot object snapshot-S is written;
//  2. a compacted event (through S) is appended on the log subject, so that
//     every reader behind S will meet a gap in the sequences and reload the
//     snapshot, even if everything between it and S is purged;
//  3. each task subject is purged below the task's latest event as of S
//     (the task keeps that one event, so the next append's condition,
//     Nats-Expected-Last-Subject-Sequence, still has something to check: a
//     fully purged subject would look like a task that never existed), and
//     the log subject is purged through S;
//  4. snapshot-S is marked purged, and older snapshot objects are deleted.
//
// A crash anywhere leaves the newest snapshot plus the events above it,
// which replay to the same state. Only tasks changed since the last snapshot
// marked purged are purged again, so a compaction costs one purge per task
// that changed since the previous one.

const purgedKey = "art-purged"

type snapRef struct {
	name   string
	seq    uint64
	purged bool
}

func snapName(seq uint64) string { return fmt.Sprintf("snapshot-%020d", seq) }

func parseSnapName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "snapshot-")
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// objectStore returns the snapshot store, nil if it does not exist and
// create is false.
func (b *Backend) objectStore(ctx context.Context, create bool) (jetstream.ObjectStore, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.obs != nil {
		return b.obs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	obs, err := b.js.ObjectStore(ctx, b.snapObj)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		if !create {
			return nil, nil
		}
		obs, err = b.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      b.snapObj,
			Description: "artq queue " + b.queue + ": snapshots",
			Storage:     jetstream.FileStorage,
			Replicas:    b.opts.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			obs, err = b.js.ObjectStore(ctx, b.snapObj)
		}
	}
	if err != nil {
		return nil, b.serverErr("snapshot store "+b.snapObj, err)
	}
	b.obs = obs
	return obs, nil
}

// snapshots lists the snapshot objects, oldest first.
func (b *Backend) snapshots(ctx context.Context, create bool) (jetstream.ObjectStore, []snapRef, error) {
	obs, err := b.objectStore(ctx, create)
	if err != nil || obs == nil {
		return obs, nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	infos, err := obs.List(lctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return obs, nil, nil
	}
	if err != nil {
		return nil, nil, b.serverErr("list snapshots in "+b.snapObj, err)
	}
	var refs []snapRef
	for _, in := range infos {
		if seq, ok := parseSnapName(in.Name); ok && !in.Deleted {
			refs = append(refs, snapRef{name: in.Name, seq: seq, purged: in.Metadata[purgedKey] != ""})
		}
	}
	slices.SortFunc(refs, func(a, b snapRef) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return obs, refs, nil
}

func (b *Backend) newestSnapshot(ctx context.Context) (*snapRef, error) {
	_, refs, err := b.snapshots(ctx, false)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	return &refs[len(refs)-1], nil
}

// Snapshot implements queue.Backend.
func (b *Backend) Snapshot(ctx context.Context) (*queue.Snapshot, error) {
	var snap *queue.Snapshot
	err := b.patient(ctx, func() error {
		var err error
		snap, err = b.loadSnapshot(ctx)
		return err
	})
	return snap, err
}

func (b *Backend) loadSnapshot(ctx context.Context) (*queue.Snapshot, error) {
	for tries := 0; ; tries++ {
		obs, refs, err := b.snapshots(ctx, false)
		if err != nil || len(refs) == 0 {
			return nil, err
		}
		ref := refs[len(refs)-1]
		gctx, cancel := context.WithTimeout(ctx, b.opts.Timeout+time.Second)
		data, err := obs.GetBytes(gctx, ref.name)
		cancel()
		if errors.Is(err, jetstream.ErrObjectNotFound) && tries < 3 {
			continue // removed by a newer compaction meanwhile
		}
		path := b.Location() + "/" + b.snapObj + "/" + ref.name
		if err != nil {
			return nil, b.serverErr("read snapshot "+ref.name, err)
		}
		snap, err := queue.DecodeSnapshot(data)
		if err != nil {
			return nil, &queue.CorruptError{Path: path, Offset: -1, Why: err.Error(), Err: err}
		}
		if snap.Seq != ref.seq {
			return nil, &queue.CorruptError{Path: path, Offset: -1, Why: fmt.Sprintf("holds the state at %d, its name says %d", snap.Seq, ref.seq)}
		}
		return snap, nil
	}
}

// purgeParallel is how many purge requests compaction keeps in flight.
const purgeParallel = 16

// Compact implements queue.Backend (see the steps above).
func (b *Backend) Compact(ctx context.Context, snap *queue.Snapshot) error {
	if b.opts.ReadOnly {
		return queue.ErrReadOnly
	}
	obs, refs, err := b.snapshots(ctx, true)
	if err != nil {
		return err
	}
	var cur, done uint64
	for _, r := range refs {
		cur = max(cur, r.seq)
		if r.purged {
			done = max(done, r.seq)
		}
	}
	if snap.Seq < cur {
		return fmt.Errorf("compact: a newer snapshot (%d) exists: %w", cur, queue.ErrStale)
	}
	ictx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	s, err := b.js.Stream(ictx, b.stream)
	cancel()
	if err != nil {
		return b.serverErr("compact: look up stream "+b.stream, err)
	}
	if last := s.CachedInfo().State.LastSeq; snap.Seq > last {
		return exitcode.Errorf(exitcode.Internal, "compact: snapshot at %d is ahead of the log at %d", snap.Seq, last)
	}
	name := snapName(snap.Seq)
	// 1. The snapshot, unless this is a second run for the same state.
	if snap.Seq != cur || len(refs) == 0 {
		pctx, cancel := context.WithTimeout(ctx, b.opts.RetryTimeout)
		_, err := obs.PutBytes(pctx, name, queue.EncodeSnapshot(snap))
		cancel()
		if err != nil {
			return b.serverErr("compact: write snapshot "+name, err)
		}
	}
	if err := b.hook("snapshot"); err != nil {
		return err
	}
	// 2. The compacted event.
	if _, err := b.Append(ctx, []queue.Proposal{{Event: &queue.Event{Time: time.Now().UTC(), Type: queue.EventCompacted, Through: snap.Seq}, Any: true}}); err != nil {
		return err
	}
	if err := b.hook("compacted"); err != nil {
		return err
	}
	// 3. Purge.
	var subjects []purge
	for i := range snap.Tasks {
		t := &snap.Tasks[i]
		if t.LastSeq > done && t.EnqSeq < t.LastSeq {
			subjects = append(subjects, purge{b.taskPre + t.ID, t.LastSeq})
		}
	}
	subjects = append(subjects, purge{b.logSubj, snap.Seq + 1})
	if half := len(subjects) / 2; b.opts.hook != nil && half > 0 {
		// In tests: stop halfway through the purges.
		if err := b.purgeAll(ctx, s, subjects[:half]); err != nil {
			return err
		}
		if err := b.hook("half-purged"); err != nil {
			return err
		}
		subjects = subjects[half:]
	}
	if err := b.purgeAll(ctx, s, subjects); err != nil {
		return err
	}
	if err := b.hook("purged"); err != nil {
		return err
	}
	// 4. Mark it purged; drop older snapshots.
	uctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	err = obs.UpdateMeta(uctx, name, jetstream.ObjectMeta{Name: name, Metadata: map[string]string{purgedKey: strconv.FormatUint(snap.Seq, 10)}})
	cancel()
	if err != nil {
		return b.serverErr("compact: mark snapshot "+name, err)
	}
	if err := b.hook("marked"); err != nil {
		return err
	}
	for _, r := range refs {
		if r.seq < snap.Seq {
			dctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
			err := obs.Delete(dctx, r.name)
			cancel()
			if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				return b.serverErr("compact: delete old snapshot "+r.name, err)
			}
		}
	}
	return nil
}

type purge struct {
	subject string
	below   uint64 // remove the subject's messages before this sequence
}

func (b *Backend) purgeAll(ctx context.Context, s jetstream.Stream, ps []purge) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, purgeParallel)
	for _, p := range ps {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
			err := s.Purge(pctx, jetstream.WithPurgeSubject(p.subject), jetstream.WithPurgeSequence(p.below))
			cancel()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = b.serverErr("compact: purge "+p.subject, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
