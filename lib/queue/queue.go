// Package queue owns artq's task queue: the event record, the reducer (the
// one state machine every task goes through), replay from a snapshot and the
// log, recovery of tasks whose worker died, the operations a worker makes
// (Claim, Finish) and the run spec it stores (RunSpec: the shared
// workspace, a fresh copy or git worktree per attempt, an acceptance
// command), and the Backend interface that a durable log implements
// (lib/queue/file by default; NATS JetStream by design). The worker itself
// is lib/queue/worker; recording all of it as lib/obs events is
// lib/queue/queueobs: this package knows neither obs nor the goal journal.
//
// State is never stored, only derived: every change is an event appended to
// the log and synced before any in-memory state changes, and the state is the
// replay of those events. Open recovers (for workers); Inspect only reads
// (status, log, fsck) and writes nothing at all.
//
// It refuses to guess: it never infers that a command is idempotent (an
// attempt with a trace is never run again; one without a trace is run again
// under the same attempt number), never retries a failed task on its own
// (retry is explicit and bounded by max_attempts), and never keeps a task's
// output or arguments in the log (traces are metadata only).
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

// Queue is a replayed view of one queue's log and the operations on it. It is
// safe for concurrent use; operations catch up on the log before deciding,
// and append optimistically (see Backend). Finish, whose appends concern one
// task this process usually wrote the last event of, decides on the view as
// it stands and catches up only when the append's condition says the view
// missed something (updateTask).
type Queue struct {
	b  Backend
	mu sync.Mutex // guards st and loaded
	st *State
	// loaded is false until the snapshot (if any) has been read.
	loaded bool
	now    func() time.Time
	// read counts the changes the view took from the log rather than
	// from this Queue's own appends (events read, snapshots loaded):
	// see EventsRead.
	read atomic.Uint64
}

// maxStale bounds how often one operation re-decides after losing a race.
// Each retry means another writer made progress on the same task, so the
// bound is never reached in practice; it turns a bug into an error instead
// of a spin.
const maxStale = 1000

// New returns a Queue over b that has read nothing yet.
func New(b Backend) *Queue {
	return &Queue{b: b, st: NewState(), now: time.Now}
}

// Open replays the queue and recovers tasks whose worker is gone. Workers
// use it; the backend must be writable. (A writable file backend has
// already cut a torn tail and recorded that it did.)
func Open(ctx context.Context, b Backend) (*Queue, error) {
	if b.ReadOnly() {
		return nil, ErrReadOnly
	}
	q := New(b)
	if err := q.CatchUp(ctx); err != nil {
		return nil, err
	}
	if _, err := q.Recover(ctx, ""); err != nil {
		return nil, err
	}
	return q, nil
}

// Inspect replays the queue without recovering anything: the view of
// status, log and fsck, which never write.
func Inspect(ctx context.Context, b Backend) (*Queue, error) {
	q := New(b)
	if err := q.CatchUp(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// Backend is the log the queue replays.
func (q *Queue) Backend() Backend { return q.b }

// CatchUp applies every event appended since the last catch-up.
func (q *Queue) CatchUp(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.catchUpLocked(ctx)
}

func (q *Queue) catchUpLocked(ctx context.Context) error {
	for tries := 0; ; tries++ {
		if !q.loaded {
			snap, err := q.b.Snapshot(ctx)
			if err != nil {
				return err
			}
			st := NewState()
			if snap != nil {
				if st, err = NewStateFrom(snap); err != nil {
					return &CorruptError{Path: "snapshot", Offset: -1, Why: err.Error(), Err: err}
				}
			}
			q.st, q.loaded = st, true
			q.read.Add(1)
		}
		err := q.b.Read(ctx, q.st.Seq, func(ev *Event) error {
			if err := q.st.Apply(ev); err != nil {
				return &CorruptError{Path: "log", Offset: -1, Seq: ev.Seq, Why: "illegal event: " + err.Error(), Err: err}
			}
			q.read.Add(1)
			return nil
		})
		var ce *CompactedError
		if errors.As(err, &ce) && tries < 3 {
			// A compaction moved the base past us: start again from the
			// newer snapshot.
			q.loaded = false
			continue
		}
		return err
	}
}

// View calls fn with the caught-up state under the queue's lock. fn must not
// keep references to tasks after it returns.
func (q *Queue) View(ctx context.Context, fn func(*State) error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUpLocked(ctx); err != nil {
		return err
	}
	return fn(q.st)
}

// viewLocal is View without catching up: for readers that just did.
func (q *Queue) viewLocal(fn func(*State)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fn(q.st)
}

// update is the one way the queue changes: catch up, decide on the current
// state, append conditionally, and decide again if someone else changed the
// task meanwhile. decide returns no proposals to do nothing.
func (q *Queue) update(ctx context.Context, decide func(*State) ([]Proposal, error)) ([]*Event, error) {
	for tries := 0; tries < maxStale; tries++ {
		q.mu.Lock()
		err := q.catchUpLocked(ctx)
		var ps []Proposal
		if err == nil {
			ps, err = decide(q.st)
		}
		q.mu.Unlock()
		if err != nil || len(ps) == 0 {
			return nil, err
		}
		evs, err := q.b.Append(ctx, ps)
		if errors.Is(err, ErrStale) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return evs, q.applyOwn(evs)
	}
	return nil, exitcode.Errorf(exitcode.Internal, "append: still conflicting after %d tries", maxStale)
}

// applyOwn keeps the view current from this queue's own appends: the
// events Append returned (synced, with their sequence) are applied at once
// when they continue the view directly, so that claiming, tracing and
// finishing never read back what this process just wrote. When someone
// else appended in between, the events are left for the next catch-up,
// which reads the tail from the backend's cursor (the file backend then
// steps over this process's own commits without reading them).
func (q *Queue) applyOwn(evs []*Event) error {
	if len(evs) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.loaded || evs[0].Seq != q.st.Seq+1 {
		return nil
	}
	for i, ev := range evs {
		if ev.Seq != evs[0].Seq+uint64(i) {
			return nil
		}
	}
	for _, ev := range evs {
		if err := q.st.Apply(ev); err != nil {
			return &CorruptError{Path: "log", Offset: -1, Seq: ev.Seq, Why: "illegal event: " + err.Error(), Err: err}
		}
	}
	return nil
}

// EnqueueRequest is one task to enqueue.
type EnqueueRequest struct {
	// ID is the caller's id; empty means a generated one. A caller's id makes
	// the enqueue idempotent: the same id with the same manifest and
	// max_attempts succeeds without a second task; with anything else it is a
	// conflict (exit 3).
	ID          string
	Task        *execx.Task
	MaxAttempts int
	// Run says how the worker runs the task beyond its manifest (its own
	// workspace, an acceptance command); nil or zero asks for nothing.
	Run *RunSpec
}

// Enqueued says what an enqueue did for one request.
type Enqueued struct {
	Status  TaskStatus
	Created bool // false: the task already existed, identical
}

// Enqueue adds tasks in one append: one sync for the whole batch, and all of
// them or none. A conflict on any request appends nothing. It is
// EnqueueBatch of a Batch made from reqs, with a result per request.
func (q *Queue) Enqueue(ctx context.Context, reqs []EnqueueRequest) ([]Enqueued, error) {
	var b Batch
	for _, r := range reqs {
		if err := b.Add(r); err != nil {
			return nil, err
		}
	}
	res, err := q.EnqueueBatch(ctx, &b)
	if err != nil {
		return nil, err
	}
	out := make([]Enqueued, 0, len(reqs))
	res.Each(func(e Enqueued) error { out = append(out, e); return nil })
	return out, nil
}

// IdempotentIDs gives every request that has no id of its own (neither
// ID nor the manifest's id) an id derived from key and the request's
// position in the batch (1-based): "k" + 16 hex digits of SHA-256(key) +
// "-" + position. Running the same batch again with the same key then
// names the same tasks, so the enqueue is idempotent (the same tasks
// again succeed without a second copy; different ones conflict, exit 3)
// where generated ids would have enqueued everything twice. ReadBatch does
// the same as it reads (BatchOptions.IdempotencyKey).
func IdempotentIDs(key string, reqs []EnqueueRequest) error {
	k, err := newIdemKey(key)
	if err != nil {
		return err
	}
	for i := range reqs {
		if reqs[i].ID == "" && (reqs[i].Task == nil || reqs[i].Task.ID == "") {
			reqs[i].ID = k.id(i + 1)
		}
	}
	return nil
}

// updateTask is update for a decision about one existing task, which the
// append's condition (the task's latest event) guards: it decides first on
// the view as it stands, without reading the log, and catches up only if
// that decision finds nothing to do, fails, or loses its condition (then
// it is update). A task's state is a function of its own events alone, so
// when its latest event is unchanged a fresher view would have decided the
// same; a view that missed one of its events fails the condition, and the
// backend appends nothing. The worker's trace and terminal event, which
// this process usually appended the task's previous event for, cost no
// log read.
func (q *Queue) updateTask(ctx context.Context, decide func(*State) ([]Proposal, error)) ([]*Event, error) {
	q.mu.Lock()
	var ps []Proposal
	var err error
	if q.loaded {
		ps, err = decide(q.st)
	}
	q.mu.Unlock()
	if err != nil || len(ps) == 0 {
		return q.update(ctx, decide)
	}
	evs, err := q.b.Append(ctx, ps)
	if errors.Is(err, ErrStale) {
		return q.update(ctx, decide)
	}
	if err != nil {
		return nil, err
	}
	return evs, q.applyOwn(evs)
}

// updateMaybe is update, except that a decision that needs no state (only
// generated ids) skips catching up, so enqueueing into a large log costs one
// append, not a replay.
func (q *Queue) updateMaybe(ctx context.Context, needState bool, decide func(*State) ([]Proposal, error)) ([]*Event, error) {
	if needState {
		return q.update(ctx, decide)
	}
	ps, err := decide(nil)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	evs, err := q.b.Append(ctx, ps)
	if err != nil {
		return nil, err
	}
	return evs, q.applyOwn(evs)
}

// Cancel cancels a task: a queued task at once; a running task by appending
// cancel_requested, which its worker sees within one poll and answers by
// killing the process group. A running task whose worker is gone is
// recovered on the spot (to cancelled, or to its trace's result). Cancelling
// a task whose cancel is already requested changes nothing and succeeds; a
// finished task is a conflict (exit 3); an unknown one exit 4.
func (q *Queue) Cancel(ctx context.Context, id string) (TaskStatus, error) {
	var worker string
	_, err := q.update(ctx, func(st *State) ([]Proposal, error) {
		t := st.Task(id)
		if t == nil {
			return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		ev := &Event{Time: q.now().UTC(), Task: id, Attempt: t.Attempt}
		switch t.State {
		case StateQueued:
			ev.Type = EventCancelled
		case StateRunning:
			worker = t.Worker
			if t.CancelRequested {
				return nil, nil
			}
			ev.Type, ev.Claim = EventCancelRequested, t.Claim
		default:
			return nil, exitcode.Errorf(exitcode.Conflict, "task %s is %s: nothing to cancel", id, t.State)
		}
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	if err != nil {
		return TaskStatus{}, err
	}
	if worker != "" {
		alive, err := q.b.Alive(ctx, worker)
		if err != nil {
			return TaskStatus{}, err
		}
		if !alive {
			if _, err := q.recoverTask(ctx, id, worker); err != nil {
				return TaskStatus{}, err
			}
		}
	}
	return q.Status(ctx, id)
}

// Retry puts a failed task back in the queue under its next attempt number,
// if it has attempts left (exit 3 otherwise).
func (q *Queue) Retry(ctx context.Context, id string) (TaskStatus, error) {
	_, err := q.update(ctx, func(st *State) ([]Proposal, error) {
		t := st.Task(id)
		if t == nil {
			return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		if t.State != StateFailed {
			return nil, exitcode.Errorf(exitcode.Conflict, "task %s is %s: only a failed task can be retried", id, t.State)
		}
		if t.Attempt >= t.MaxAttempts {
			return nil, exitcode.Errorf(exitcode.Conflict, "task %s: all %d attempts used (max_attempts %d)", id, t.Attempt, t.MaxAttempts)
		}
		ev := &Event{Time: q.now().UTC(), Type: EventRetried, Task: id, Attempt: t.Attempt + 1}
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	if err != nil {
		return TaskStatus{}, err
	}
	return q.Status(ctx, id)
}

// Status returns one task's status after catching up.
func (q *Queue) Status(ctx context.Context, id string) (TaskStatus, error) {
	var ts TaskStatus
	err := q.View(ctx, func(st *State) error {
		t := st.Task(id)
		if t == nil {
			return fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		ts = StatusOf(t)
		return nil
	})
	return ts, err
}

// EventsRead counts the changes the view took from the log rather than from
// this Queue's own appends: events read by catch-ups and snapshots loaded.
// A watcher that finds it unchanged since its last look, and Seq moved
// on, knows that everything since was this Queue's own (which the worker
// needs not look at for cancel requests).
func (q *Queue) EventsRead() uint64 { return q.read.Load() }

// Seq is the sequence of the last event applied.
func (q *Queue) Seq() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st.Seq
}

// Recover reconciles every running task whose worker (other than self) no
// longer holds its lease, by the rules of docs/artq.md: a trace for the
// current attempt → that trace's terminal result, never a second run; else a
// requested cancel → cancelled; else → requeued under the same attempt
// number. Tasks of live workers are left alone.
func (q *Queue) Recover(ctx context.Context, self string) ([]*Event, error) {
	type cand struct{ id, worker string }
	var cands []cand
	if err := q.View(ctx, func(st *State) error {
		st.Running(func(t *Task) {
			if t.Worker != self {
				cands = append(cands, cand{t.ID, t.Worker})
			}
		})
		return nil
	}); err != nil {
		return nil, err
	}
	alive := map[string]bool{}
	var out []*Event
	for _, c := range cands {
		live, ok := alive[c.worker]
		if !ok {
			var err error
			if live, err = q.b.Alive(ctx, c.worker); err != nil {
				return out, err
			}
			alive[c.worker] = live
		}
		if live {
			continue
		}
		ev, err := q.recoverTask(ctx, c.id, c.worker)
		if err != nil {
			return out, err
		}
		if ev != nil {
			out = append(out, ev)
		}
	}
	return out, nil
}

// recoverTask recovers one task whose worker is known to be gone. It does
// nothing if the task is no longer running under that worker (another
// recoverer was first).
func (q *Queue) recoverTask(ctx context.Context, id, dead string) (*Event, error) {
	evs, err := q.update(ctx, func(st *State) ([]Proposal, error) {
		t := st.Task(id)
		if t == nil || t.State != StateRunning || t.Worker != dead {
			return nil, nil
		}
		ev := RecoveryEvent(t, q.now().UTC())
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return evs[0], nil
}

// RecoveryEvent is the event that recovers running task t whose worker is
// gone: its trace's result if the attempt was traced, cancelled if a cancel
// was requested, else requeued with the attempt preserved.
func RecoveryEvent(t *Task, now time.Time) *Event {
	ev := &Event{Time: now, Task: t.ID, Attempt: t.Attempt, Worker: t.Worker, Claim: t.Claim}
	switch {
	case t.Trace != nil:
		ev.Type = t.Trace.Outcome()
		as := string(t.Trace.Status)
		if a := t.Trace.Acceptance; a != nil {
			as += ", acceptance " + string(a.Status)
		}
		ev.Reason = fmt.Sprintf("recovered: worker %s is gone; attempt %d was traced as %s", t.Worker, t.Attempt, as)
	case t.CancelRequested:
		ev.Type = EventCancelled
		ev.Reason = fmt.Sprintf("recovered: worker %s is gone; cancel was requested", t.Worker)
	default:
		ev.Type = EventRequeued
		ev.Reason = fmt.Sprintf("recovered: worker %s is gone; attempt %d was not traced and runs again", t.Worker, t.Attempt)
	}
	return ev
}

// Compact writes a snapshot of the caught-up state and drops the events it
// covers, so replay cost stays bounded as history grows. It returns the
// snapshot it wrote.
func (q *Queue) Compact(ctx context.Context) (*Snapshot, error) {
	for tries := 0; tries < 10; tries++ {
		var snap *Snapshot
		if err := q.View(ctx, func(st *State) error {
			snap = st.Snapshot(q.now())
			return nil
		}); err != nil {
			return nil, err
		}
		err := q.b.Compact(ctx, snap)
		if errors.Is(err, ErrStale) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return snap, nil
	}
	return nil, exitcode.Errorf(exitcode.Internal, "compact: the log kept moving; try again")
}

// FollowOptions configure Follow.
type FollowOptions struct {
	// After is the sequence to start after (0: from the first event held).
	After uint64
	// Follow keeps waiting for new events until ctx ends.
	Follow bool
	// Skipped, if set, is told about events compacted away before the
	// first one still held, when reading starts from the beginning (After
	// 0): their result is in the snapshot, and the log holds what
	// follows. A reader that asked for a position (After > 0), or that
	// has read anything and then falls behind a compaction, never skips:
	// Follow fails with a *GapError instead.
	Skipped func(from, to uint64)
	// Idle, if set, runs each time the events in hand are exhausted (flush
	// output before waiting).
	Idle func() error
}

// Follow calls fn for every event after opt.After, in order, and with
// opt.Follow for every event appended later, until ctx ends (returning its
// cause). It only reads.
//
// Events compacted away before the reader got to them are never skipped
// silently: see FollowOptions.Skipped and GapError.
func Follow(ctx context.Context, b Backend, opt FollowOptions, fn func(*Event) error) error {
	after := opt.After
	read := false
	for {
		err := b.Read(ctx, after, func(ev *Event) error {
			after, read = ev.Seq, true
			return fn(ev)
		})
		var ce *CompactedError
		if errors.As(err, &ce) && ce.First > after+1 {
			if read || opt.After > 0 {
				return &GapError{From: after + 1, To: ce.First - 1}
			}
			if opt.Skipped != nil {
				opt.Skipped(after+1, ce.First-1)
			}
			after = ce.First - 1
			read = true
			continue
		}
		if err != nil {
			return err
		}
		if opt.Idle != nil {
			if err := opt.Idle(); err != nil {
				return err
			}
		}
		if !opt.Follow {
			return nil
		}
		if err := b.Wait(ctx, after); err != nil {
			return err
		}
	}
}

// GapError is a reader that fell behind compaction: events From..To were
// folded into a snapshot before it read them, so it cannot go on without
// missing them. It is a conflict (exit 3): the reader's position is stale.
type GapError struct{ From, To uint64 }

func (e *GapError) Error() string {
	return fmt.Sprintf("events %d to %d were compacted into the snapshot before they were read; stopping rather than skipping them", e.From, e.To)
}

// ExitCode implements exitcode.Coder.
func (e *GapError) ExitCode() int { return exitcode.Conflict }

// Hint tells the user what to do.
func (e *GapError) Hint() string { return e.RenderHint(nil) }

// RenderHint is Hint with the reader's start position ("After") named by
// name: the CLI's flag.
func (e *GapError) RenderHint(name func(field string) string) string {
	if name == nil {
		name = exitcode.Label
	}
	return "their results are in 'artq status'; run 'artq log' again (without " + name("After") + ") to read what the log holds now"
}
