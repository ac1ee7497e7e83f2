package stateindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// Thresholds of the writers that refresh the index as a side job.
const (
	// BatchMin is the smallest enqueue batch after which enqueue refreshes
	// the index: a small one leaves a short tail for status to read.
	BatchMin = 1000
	// TailMin is how many events past the index make a worker rewrite it
	// (the tail status reads grows by about one event per transition).
	TailMin = 5000
)

// Refresh rewrites the index of b's queue directory to cover the log as it
// is now, unless it already covers all but fewer than minTail events. It
// starts from the index and the log's tail when the index is usable (no
// replay), else from a replay by a reader of its own (no recovery). Other
// backends have no index: it does nothing for them.
func Refresh(ctx context.Context, b queue.Backend, minTail int) error {
	dir, ok := dirOf(b)
	if !ok {
		return nil
	}
	return refresh(ctx, b, minTail, func() (*Built, error) {
		// A reader of its own, so the caller's backend keeps its place.
		rb, err := file.Open(dir, file.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer rb.Close()
		q, err := queue.Inspect(ctx, rb)
		if err != nil {
			return nil, err
		}
		return buildQueue(ctx, q)
	})
}

// refresh is Refresh with the way to a state when the index is not usable.
func refresh(ctx context.Context, b queue.Backend, minTail int, replay func() (*Built, error)) error {
	dir, ok := dirOf(b)
	if !ok {
		return nil
	}
	if v, err := Load(ctx, dir); err == nil {
		defer v.Close()
		if v.TailEvents < max(minTail, 1) {
			return nil
		}
		enc := newEncoder(v.total, v.total*96)
		err := v.loadAll()
		if err == nil {
			err = v.copyInto(enc)
		}
		if err == nil {
			var built *Built
			if built, err = enc.finish(v.Seq()); err == nil {
				return built.Write(dir)
			}
		}
		if errors.Is(err, errNotIndexable) {
			return err
		}
		// A damaged index: rebuild from a replay.
	}
	built, err := replay()
	if err != nil {
		return err
	}
	return built.Write(dir)
}

// buildQueue encodes q's caught-up state under q's lock.
func buildQueue(ctx context.Context, q *queue.Queue) (*Built, error) {
	var built *Built
	err := q.View(ctx, func(st *queue.State) error {
		var err error
		built, err = Build(st)
		return err
	})
	return built, err
}

// AfterBatch writes the index after q appended res, an enqueue of
// res.Created new tasks, if that is at least BatchMin. It builds the index
// from what the enqueuing process already holds, without reading the log
// back or replaying it:
//
//   - q's own state, when it holds the batch (a batch with ids of the
//     caller's choosing caught up before deciding and applied its own
//     append);
//   - the batch's events alone, when they are the log's first events (a
//     new queue);
//   - the index as it stood just before the batch (it covers exactly the
//     event before the batch's first, and is checked against the log as a
//     reader checks it) and the batch's events.
//
// A batch only enqueues tasks no earlier event names, so each way gives
// the bytes a replay of the log through the batch would; the index is
// bound to the log at the batch's last event as Refresh binds it, and
// what other writers appended after the batch is the tail status reads.
// When none of these holds (another writer appended between the index and
// the batch, the index is missing or damaged, a torn tail was cut just
// before the batch) it falls back to Refresh: the index and the log's
// tail, or a replay by a reader of its own. Other backends have no index:
// it does nothing for them. Its error is only worth a warning (the index
// is a cache).
//
// Call it last, keeping no reference to res: once the batch's rows are
// encoded it lets res go, and the rest of the index reuses the batch's
// memory.
func AfterBatch(ctx context.Context, q *queue.Queue, res *queue.BatchResult) error {
	_, err := afterBatch(ctx, q, res)
	return err
}

// How afterBatch came to its index (tests check which way was taken).
const (
	viaNothing = "nothing" // too small a batch, or not a file queue
	viaState   = "state"   // q's own state, which holds the batch
	viaBatch   = "batch"   // the batch alone: the log's first events
	viaIndex   = "index"   // the index just before the batch, and the batch
	viaRefresh = "refresh" // Refresh: the index and the log's tail, or a replay
)

func afterBatch(ctx context.Context, q *queue.Queue, res *queue.BatchResult) (string, error) {
	b := q.Backend()
	dir, ok := dirOf(b)
	if !ok || res.Created < BatchMin {
		return viaNothing, nil
	}
	if q.Seq() == res.LastSeq {
		return viaState, WriteQueue(ctx, q)
	}
	built, how, err := buildAfter(dir, res)
	if err == nil {
		if err = built.Write(dir); err == nil {
			return how, nil
		}
	}
	if errors.Is(err, errNotIndexable) {
		return how, err
	}
	return viaRefresh, Refresh(ctx, b, 1)
}

// buildAfter encodes the state through res.LastSeq from the batch's
// events and, unless they are the log's first, the index of dir as it
// stands at the event just before them.
//
// It encodes the batch's rows first and then lets go of res: the batch's
// events and manifests (about 35 MB for 100,000 tasks) are then garbage
// if the caller keeps res no longer, and one collection (of a live heap
// of little more than the rows) lets the index's tables, the earlier
// index's rows and the write reuse that memory instead of adding to the
// process's peak.
func buildAfter(dir string, res *queue.BatchResult) (*Built, string, error) {
	first, last := res.FirstSeq, res.LastSeq
	how := viaBatch
	if first > 1 {
		how = viaIndex
	}
	var base *View
	if first > 1 {
		// Checked before any work: without it, Refresh.
		var err error
		if base, err = loadAt(dir, first-1); err != nil {
			return nil, how, err
		}
		defer base.Close()
	}
	batch, err := encodeBatch(res.Events(), first, last)
	if err != nil {
		return nil, how, err
	}
	res = nil
	runtime.GC()
	enc := batch
	if base != nil {
		enc = newEncoder(int(base.h.tasks)+len(batch.states), int(base.h.rowsLen)+len(batch.rows))
		if err := base.copyInto(enc); err != nil {
			return nil, how, err
		}
		if err := enc.addAll(batch); err != nil {
			return nil, how, err
		}
	}
	built, err := enc.finish(last)
	return built, how, err
}

// encodeBatch encodes the rows of the tasks evs enqueued, checking that
// they are the enqueues of events first through last.
func encodeBatch(evs []*queue.Event, first, last uint64) (*encoder, error) {
	if len(evs) == 0 || evs[len(evs)-1].Seq != last {
		return nil, fmt.Errorf("state index: the batch's events do not end at %d", last)
	}
	// About what each row takes besides its id: a batch's tasks mostly
	// share their program.
	rows := len(evs) * (rowFixed + len(queue.ProgramOf(evs[0].Manifest)))
	for _, ev := range evs {
		rows += len(ev.Task)
	}
	enc := newEncoder(len(evs), rows)
	for i, ev := range evs {
		if ev.Seq != first+uint64(i) || ev.Type != queue.EventEnqueued {
			return nil, fmt.Errorf("state index: event %d of the batch is not its enqueue %d", ev.Seq, first+uint64(i))
		}
		t := queue.EnqueuedTask(ev)
		if err := enc.add(&t, queue.ProgramOf(ev.Manifest)); err != nil {
			return nil, err
		}
	}
	return enc, nil
}

// rowFixed is about what the row of a newly enqueued task takes besides
// its id and program: the encoder's rows are then allocated about once.
const rowFixed = 48

// loadAt opens dir's index, checked against the log as Load checks it,
// without applying the log's tail, if it covers exactly event seq.
func loadAt(dir string, seq uint64) (*View, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	lf, err := os.Open(filepath.Join(dir, file.LogName))
	if err != nil {
		f.Close()
		return nil, err
	}
	v, err := loadBase(f, lf)
	lf.Close()
	if err != nil {
		f.Close()
		return nil, err
	}
	if v.h.seq != seq {
		f.Close()
		return nil, fmt.Errorf("state index: covers event %d, not %d", v.h.seq, seq)
	}
	if v.st, err = queue.NewStateFrom(&queue.Snapshot{Seq: seq}); err != nil {
		f.Close()
		return nil, err
	}
	return v, nil
}

// Check compares dir's index, with the log's tail applied, against st, the
// full replay of the same log. It returns a note saying how the index
// stands: absent, ignored (and why: status replays instead), or covering
// the log through some sequence. An index that status would use but that
// disagrees with the replay is an error naming the first task that
// differs. The log must not change meanwhile (a test's queue); fsck of a
// live queue uses Fsck, which pins the files together.
func Check(ctx context.Context, dir string, st *queue.State) (string, error) {
	v, err := Load(ctx, dir)
	return check(filepath.Join(dir, FileName), v, err, st)
}

// check is Check of the view v (or the error that loading it gave).
func check(path string, v *View, err error, st *queue.State) (string, error) {
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(path); serr != nil {
			return FileName + ": absent (status replays the log)", nil
		}
	}
	if err != nil {
		return fmt.Sprintf("%s: not used, status replays the log: %v", FileName, err), nil
	}
	defer v.Close()
	if err := v.loadAll(); err != nil {
		return fmt.Sprintf("%s: not used, status replays the log: %v", FileName, err), nil
	}
	wrong := func(format string, args ...any) error {
		return &queue.CorruptError{Path: path, Offset: -1, Why: fmt.Sprintf(format, args...) + " (status would show it: remove the file; writers rebuild it)"}
	}
	if v.Seq() != st.Seq {
		return "", wrong("the index with the log's tail is at event %d, the replay at %d", v.Seq(), st.Seq)
	}
	if got, want := v.Summary(), queue.SummaryOf(st); got != want {
		return "", wrong("counts %+v, the replay has %+v", got, want)
	}
	var order []*queue.Task
	st.Tasks(func(t *queue.Task) bool { order = append(order, t); return true })
	i := 0
	err = v.Tasks("", func(t *queue.Task, program string) error {
		if i >= len(order) {
			return wrong("task %s is not in the replay", t.ID)
		}
		r := order[i]
		i++
		if t.ID != r.ID {
			return wrong("task %s where the replay has %s", t.ID, r.ID)
		}
		if program != queue.ProgramOf(r.Manifest) || !sameTask(t, r) {
			return wrong("task %s differs from the replay", t.ID)
		}
		return nil
	})
	if err != nil {
		if queue.IsCorrupt(err) {
			return "", err
		}
		return "", wrong("%v", err)
	}
	if i != len(order) {
		return "", wrong("%d tasks, the replay has %d", i, len(order))
	}
	return fmt.Sprintf("%s: agrees with the replay; covers events through %d of %d", FileName, v.IndexSeq(), st.Seq), nil
}

// sameTask compares what the index keeps of a task.
func sameTask(a, b *queue.Task) bool {
	return a.ID == b.ID && a.State == b.State && a.Attempt == b.Attempt && a.Attempts == b.Attempts &&
		a.MaxAttempts == b.MaxAttempts && a.Worker == b.Worker && a.Claim == b.Claim &&
		a.CancelRequested == b.CancelRequested && sameTrace(a.Trace, b.Trace) && sameTrace(a.Last, b.Last) &&
		a.LastAttempt == b.LastAttempt && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.EnqSeq == b.EnqSeq && a.LastSeq == b.LastSeq
}

// WriteQueue writes the index of q's caught-up state (for writers that hold
// it already, such as compact). It encodes under q's lock and writes after.
// Other backends have no index: it does nothing for them.
func WriteQueue(ctx context.Context, q *queue.Queue) error {
	dir, ok := dirOf(q.Backend())
	if !ok {
		return nil
	}
	built, err := buildQueue(ctx, q)
	if err != nil {
		return err
	}
	return built.Write(dir)
}

// dirOf is the queue directory of a file backend, also behind wrappers
// that say what they wrap (Unwrap).
func dirOf(b queue.Backend) (string, bool) {
	for b != nil {
		if fb, ok := b.(*file.Backend); ok {
			return fb.Dir(), true
		}
		u, ok := b.(interface{ Unwrap() queue.Backend })
		if !ok {
			return "", false
		}
		b = u.Unwrap()
	}
	return "", false
}

// Keep refreshes the index of q's queue in the background, off the
// caller's path and without q's lock (from the index and the log's tail):
// every interval, when the log has gone TailMin events past the index, and
// once more when stop is called (stop waits for it), then from q's own
// state if the index was not usable. A worker runs it for its whole life. warn, when not nil, hears failures
// (the index is a cache: a failure only leaves status replaying); a queue
// whose state cannot be indexed is not tried again.
func Keep(ctx context.Context, q *queue.Queue, interval time.Duration, warn func(error)) (stop func()) {
	b := q.Backend()
	if _, ok := dirOf(b); !ok {
		return func() {}
	}
	ctx = context.WithoutCancel(ctx)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		tick := func(min int) bool {
			var err error
			if min == 1 {
				err = refresh(ctx, b, 1, func() (*Built, error) { return buildQueue(ctx, q) })
			} else {
				err = Refresh(ctx, b, min)
			}
			if err != nil && warn != nil {
				warn(err)
			}
			return !errors.Is(err, errNotIndexable)
		}
		for {
			select {
			case <-quit:
				tick(1)
				return
			case <-t.C:
				if !tick(TailMin) {
					<-quit
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
