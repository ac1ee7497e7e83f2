// Package queuetest is the contract every queue.Backend must honour, as a
// test suite any backend can run: appends with conditions and ErrStale,
// all-or-nothing batches, Read order and CompactedError, Wait, Compact,
// leases and Alive, Check, and read-only handles that refuse writes and
// create nothing; then the shared queue (enqueue, recovery, workers) on top
// of it. A backend's own package adds what is specific to it (torn tails
// for the file log, server restarts for NATS).
package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// Store is one queue, empty and not yet created, in some backend's storage.
type Store interface {
	// Open returns a new handle on the queue, as another process would
	// open it (its own files or its own connection). The test closes it.
	Open(t *testing.T, readOnly bool) queue.Backend
	// Exists reports whether any of the queue's storage exists.
	Exists(t *testing.T) bool
}

// Run runs the whole contract, each case on a fresh store from newStore.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

var cases = []struct {
	name string
	fn   func(*testing.T, Store)
}{
	{"AppendRead", testAppendRead},
	{"ReadStopsOnError", testReadStops},
	{"Conditions", testConditions},
	{"BatchAllOrNothing", testBatch},
	{"BatchLarge", testBatchLarge},
	{"EventOwnership", testOwnership},
	{"AcrossHandles", testAcrossHandles},
	{"Wait", testWait},
	{"ConcurrentStartOneWins", testConcurrentStart},
	{"ConcurrentAppendsGapless", testConcurrentDisjoint},
	{"Compact", testCompact},
	{"Leases", testLeases},
	{"ReadOnly", testReadOnly},
	{"Check", testCheck},
	{"QueueEnqueue", testQueueEnqueue},
	{"QueueRecovery", testQueueRecovery},
	{"QueueWorkers", testQueueWorkers},
	{"CompactWhileWorking", testCompactWhileWorking},
	{"ZombieFence", testZombieFence},
	{"FollowBehindCompaction", testFollowBehindCompaction},
}

var bg = context.Background()

// Manifest is the Task manifest the suite enqueues.
var Manifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

// Enq proposes enqueueing task id, which must not exist yet.
func Enq(id string) queue.Proposal {
	return queue.Proposal{Event: &queue.Event{Time: t0, Type: queue.EventEnqueued, Task: id, MaxAttempts: 3, Manifest: Manifest}}
}

// Ev proposes an event of task id with attempt 1, expecting seq `expect`.
func Ev(typ queue.EventType, id, worker string, expect uint64) queue.Proposal {
	e := &queue.Event{Time: t0, Type: typ, Task: id, Attempt: 1}
	switch typ {
	case queue.EventStarted:
		e.Worker = worker
	case queue.EventTrace:
		e.Trace = &queue.Trace{Status: execx.StatusSucceeded, DurationMS: 7}
	}
	return queue.Proposal{Event: e, Expect: expect}
}

// MustAppend appends ps or fails the test.
func MustAppend(t testing.TB, b queue.Backend, ps ...queue.Proposal) []*queue.Event {
	t.Helper()
	evs, err := b.Append(bg, ps)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(evs) != len(ps) {
		t.Fatalf("Append returned %d events for %d proposals", len(evs), len(ps))
	}
	return evs
}

// ReadAll reads every event after `after`, failing the test on an error.
func ReadAll(t testing.TB, b queue.Backend, after uint64) []*queue.Event {
	t.Helper()
	var out []*queue.Event
	if err := b.Read(bg, after, func(ev *queue.Event) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		t.Fatalf("Read(%d): %v", after, err)
	}
	return out
}

// Seqs lists the events' sequences, for messages.
func Seqs(evs []*queue.Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = fmt.Sprint(e.Seq)
	}
	return strings.Join(s, ",")
}

func record(ev *queue.Event) string { return string(queue.AppendRecord(nil, ev)) }

func wantStale(t *testing.T, err error, task string, expect, have uint64) {
	t.Helper()
	if !errors.Is(err, queue.ErrStale) {
		t.Fatalf("err = %v; want ErrStale", err)
	}
	if exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("stale error exits %d; want %d", exitcode.Of(err), exitcode.Conflict)
	}
	var se *queue.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T %v; want a *queue.StaleError", err, err)
	}
	if se.Task != task || se.Expect != expect || se.Have != have {
		t.Errorf("StaleError = %+v; want task %s, expect %d, have %d", *se, task, expect, have)
	}
}

func testAppendRead(t *testing.T, s Store) {
	b := s.Open(t, false)
	var appended []*queue.Event
	for _, id := range []string{"a", "b", "c"} {
		appended = append(appended, MustAppend(t, b, Enq(id))...)
	}
	if got := Seqs(appended); got != "1,2,3" {
		t.Fatalf("appended seqs = %s; want 1,2,3", got)
	}
	read := ReadAll(t, b, 0)
	if len(read) != 3 {
		t.Fatalf("Read(0) = %d events; want 3", len(read))
	}
	for i := range read {
		if record(read[i]) != record(appended[i]) {
			t.Errorf("event %d read back as\n%s\nwant\n%s", i, record(read[i]), record(appended[i]))
		}
	}
	if got := Seqs(ReadAll(t, b, 1)); got != "2,3" {
		t.Errorf("Read(1) = %s; want 2,3", got)
	}
	if got := ReadAll(t, b, 3); len(got) != 0 {
		t.Errorf("Read(3) = %s; want nothing", Seqs(got))
	}
	// Time is set by the appender when the proposal has none.
	p := Enq("d")
	p.Event.Time = time.Time{}
	before := time.Now()
	ev := MustAppend(t, b, p)[0]
	if ev.Time.Before(before.Add(-time.Second)) || ev.Time.After(time.Now().Add(time.Second)) {
		t.Errorf("appended time = %v; want now", ev.Time)
	}
	if got := ReadAll(t, b, 3); len(got) != 1 || !got[0].Time.Equal(ev.Time) {
		t.Errorf("Read(3) after d = %v; want d with time %v", got, ev.Time)
	}
	// A proposal with a sequence, or none, is a bug in the caller.
	bad := Enq("e")
	bad.Event.Seq = 9
	if _, err := b.Append(bg, []queue.Proposal{bad}); err == nil || errors.Is(err, queue.ErrStale) {
		t.Errorf("Append of an event with a sequence: %v; want an error", err)
	}
	if evs, err := b.Append(bg, nil); err != nil || len(evs) != 0 {
		t.Errorf("Append(nil) = %v, %v; want nothing", evs, err)
	}
}

func testReadStops(t *testing.T, s Store) {
	b := s.Open(t, false)
	for _, id := range []string{"a", "b", "c", "d"} {
		MustAppend(t, b, Enq(id))
	}
	stop := errors.New("enough")
	n := 0
	err := b.Read(bg, 0, func(ev *queue.Event) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("Read with a failing callback: %v after %d events; want the callback's error after 2", err, n)
	}
	// The handle is still good, from anywhere.
	if got := Seqs(ReadAll(t, b, 0)); got != "1,2,3,4" {
		t.Errorf("Read(0) after a stopped read = %s", got)
	}
	if got := Seqs(ReadAll(t, b, 2)); got != "3,4" {
		t.Errorf("Read(2) = %s", got)
	}
	ctx, cancel := context.WithCancelCause(bg)
	cause := errors.New("cancelled by test")
	cancel(cause)
	if err := b.Read(ctx, 0, func(*queue.Event) error { return nil }); err != nil && !errors.Is(err, cause) && !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context: %v", err)
	}
}

func testConditions(t *testing.T, s Store) {
	b := s.Open(t, false)
	enq := MustAppend(t, b, Enq("a"))[0]
	// The task exists: another enqueue expecting none is stale.
	_, err := b.Append(bg, []queue.Proposal{Enq("a")})
	wantStale(t, err, "a", 0, enq.Seq)
	start := MustAppend(t, b, Ev(queue.EventStarted, "a", "w1", enq.Seq))[0]
	// A second start on the old position is stale and appends nothing.
	_, err = b.Append(bg, []queue.Proposal{Ev(queue.EventStarted, "a", "w2", enq.Seq)})
	wantStale(t, err, "a", enq.Seq, start.Seq)
	// An unrelated task moving on does not affect a's condition.
	MustAppend(t, b, Enq("b"))
	MustAppend(t, b, Ev(queue.EventTrace, "a", "", start.Seq))
	evs := ReadAll(t, b, 0)
	if len(evs) != 4 {
		t.Fatalf("log = %d events; want 4 (stale appends add nothing)", len(evs))
	}
	// Any skips the condition.
	p := Enq("c")
	p.Any, p.Expect = true, 77
	MustAppend(t, b, p)
	// The log replays through the reducer.
	st := queue.NewState()
	for _, ev := range ReadAll(t, b, 0) {
		if err := st.Apply(ev); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	if st.Task("a").State != queue.StateRunning || st.Task("a").Trace == nil || st.Len() != 3 {
		t.Errorf("replayed state is wrong: a=%+v, %d tasks", st.Task("a"), st.Len())
	}
}

func testBatch(t *testing.T, s Store) {
	b := s.Open(t, false)
	MustAppend(t, b, Enq("y"))
	// One stale proposal: nothing of the batch is appended.
	_, err := b.Append(bg, []queue.Proposal{Enq("x"), Enq("y"), Enq("z")})
	wantStale(t, err, "y", 0, 1)
	if got := ReadAll(t, b, 0); len(got) != 1 {
		t.Fatalf("after a stale batch the log holds %s; want only 1", Seqs(got))
	}
	// x was not appended: enqueueing it expecting nothing works.
	evs := MustAppend(t, b, Enq("x"), Enq("z"), Enq("w"))
	if got := Seqs(evs); got != "2,3,4" {
		t.Errorf("batch seqs = %s; want 2,3,4", got)
	}
	for i, id := range []string{"x", "z", "w"} {
		if evs[i].Task != id {
			t.Errorf("batch event %d is %s; want %s", i, evs[i].Task, id)
		}
	}
	// Several events of one task: only the first is checked, the rest follow.
	evs = MustAppend(t, b, Ev(queue.EventStarted, "x", "w1", 2), Ev(queue.EventTrace, "x", "", 999), Ev(queue.EventSucceeded, "x", "", 999))
	if got := Seqs(evs); got != "5,6,7" {
		t.Errorf("one task's batch = %s; want 5,6,7", got)
	}
	// The same batch again is stale as a whole (x moved on).
	_, err = b.Append(bg, []queue.Proposal{Enq("v"), Ev(queue.EventStarted, "x", "w1", 2)})
	wantStale(t, err, "x", 2, 7)
	if got := ReadAll(t, b, 0); len(got) != 7 {
		t.Errorf("log = %s after a stale batch; want 7 events", Seqs(got))
	}
}

func testBatchLarge(t *testing.T, s Store) {
	b := s.Open(t, false)
	const n = 2500
	ps := make([]queue.Proposal, n)
	for i := range ps {
		ps[i] = Enq(fmt.Sprintf("t%04d", i))
	}
	evs := MustAppend(t, b, ps...)
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) || ev.Task != fmt.Sprintf("t%04d", i) {
			t.Fatalf("event %d = seq %d task %s", i, ev.Seq, ev.Task)
		}
	}
	read := ReadAll(t, b, 0)
	if len(read) != n || read[n-1].Seq != n {
		t.Fatalf("Read = %d events; want %d", len(read), n)
	}
	// A large batch with a stale condition appends nothing.
	ps = append(ps[:0], Enq("new1"), Enq("new2"))
	for i := 0; i < n; i++ {
		ps = append(ps, Enq(fmt.Sprintf("u%04d", i)))
	}
	ps = append(ps, Enq("t0007"))
	_, err := b.Append(bg, ps)
	wantStale(t, err, "t0007", 0, 8)
	if got := ReadAll(t, b, n); len(got) != 0 {
		t.Errorf("a stale large batch appended %d events", len(got))
	}
}

// testOwnership: Append copies a proposal's event and neither changes nor
// keeps the caller's; with Proposal.Owned it completes and returns the
// caller's very event, and a failed append leaves its Seq zero so it can
// be proposed again.
func testOwnership(t *testing.T, s Store) {
	b := s.Open(t, false)
	p := Enq("a")
	before := *p.Event
	evs := MustAppend(t, b, p)
	if evs[0] == p.Event || !reflect.DeepEqual(*p.Event, before) {
		t.Fatalf("Append without Owned changed or returned the caller's event: %+v", p.Event)
	}
	p.Event.Task, p.Event.Manifest = "changed", nil // the backend must not see this
	if evs[0].Task != "a" || ReadAll(t, b, 0)[0].Task != "a" {
		t.Fatalf("Append kept the caller's event: returned %s", evs[0].Task)
	}

	ps := []queue.Proposal{Enq("b"), Enq("c"), Ev(queue.EventStarted, "a", "w1", 1)}
	for i := range ps {
		ps[i].Owned = true
	}
	ps[0].Event.Time = time.Time{} // the backend fills it in, in place
	evs = MustAppend(t, b, ps...)
	for i, ev := range evs {
		if ev != ps[i].Event || ev.Seq != uint64(i+2) {
			t.Errorf("owned event %d: returned %p seq %d, given %p", i, ev, ev.Seq, ps[i].Event)
		}
	}
	if evs[0].Time.IsZero() {
		t.Errorf("owned event with no time: the backend did not set it")
	}

	// A stale owned proposal: nothing appended, Seq still zero, and the
	// same event goes through once its condition is right.
	stale := []queue.Proposal{Enq("d"), Ev(queue.EventTrace, "a", "", 1)}
	for i := range stale {
		stale[i].Owned = true
	}
	_, err := b.Append(bg, stale)
	wantStale(t, err, "a", 1, 4)
	for i, p := range stale {
		if p.Event.Seq != 0 || p.Event.Batch != 0 || p.Event.Commit {
			t.Errorf("stale owned event %d left with seq %d batch %d commit %v", i, p.Event.Seq, p.Event.Batch, p.Event.Commit)
		}
	}
	stale[1].Expect = 4
	evs = MustAppend(t, b, stale...)
	if evs[0] != stale[0].Event || evs[1] != stale[1].Event || Seqs(evs) != "5,6" {
		t.Errorf("owned events proposed again: %s", Seqs(evs))
	}
	if got := ReadAll(t, b, 4); len(got) != 2 || got[0].Task != "d" || got[1].Type != queue.EventTrace {
		t.Errorf("log after the owned retry = %s", Seqs(got))
	}
}

func testAcrossHandles(t *testing.T, s Store) {
	a, b := s.Open(t, false), s.Open(t, false)
	r := s.Open(t, true)
	// Each handle's append is visible to the others at once, and conditions
	// computed from one handle's read hold on the other.
	last := MustAppend(t, a, Enq("t"))[0].Seq
	for i := 0; i < 40; i++ {
		w, other := a, b
		if i%2 == 1 {
			w, other = b, a
		}
		evs := ReadAll(t, other, last-1)
		if len(evs) != 1 || evs[0].Seq != last {
			t.Fatalf("round %d: the other handle read %s after %d; want %d", i, Seqs(evs), last-1, last)
		}
		ev := MustAppend(t, w, Ev(queue.EventCancelRequested, "t", "", last))[0]
		if ev.Seq != last+1 {
			t.Fatalf("round %d: seq %d after %d", i, ev.Seq, last)
		}
		last = ev.Seq
	}
	if got := ReadAll(t, r, 0); len(got) != 41 || got[40].Seq != last {
		t.Errorf("read-only handle sees %d events; want 41 through %d", len(got), last)
	}
}

func testWait(t *testing.T, s Store) {
	a, b := s.Open(t, false), s.Open(t, false)
	MustAppend(t, a, Enq("a"))
	// Something after 0 exists: at once.
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := b.Wait(ctx, 0); err != nil {
		t.Fatalf("Wait(0) with an event: %v", err)
	}
	// Nothing after 1 yet: Wait blocks until another handle appends.
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		for {
			if err := b.Wait(ctx, 1); err != nil {
				got <- err
				return
			}
			// It may return early: only an event after 1 ends the wait.
			if evs := ReadAll(t, b, 1); len(evs) > 0 {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		t.Fatalf("Wait(1) returned %v with nothing appended", err)
	case <-time.After(300 * time.Millisecond):
	}
	MustAppend(t, a, Enq("b"))
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Wait(1) = %v after an append", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Wait(1) did not return after another handle appended")
	}
	// Caught up again, the same handle waits again: nothing new, nothing
	// returned before the deadline (a Wait that returns at once would make
	// every follower spin).
	early := 0
	for range 3 {
		dctx, dcancel := context.WithTimeout(bg, 200*time.Millisecond)
		err := b.Wait(dctx, 2)
		dcancel()
		if err == nil && len(ReadAll(t, b, 2)) == 0 {
			early++
		} else if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait(2) = %v; want the deadline", err)
		}
	}
	if early == 3 {
		t.Error("Wait(2) returned at once every time with nothing after 2: a follower would spin")
	}
	// A cancelled wait returns the context's cause.
	cctx, ccancel := context.WithCancelCause(bg)
	cause := errors.New("stop waiting")
	go func() { time.Sleep(100 * time.Millisecond); ccancel(cause) }()
	start := time.Now()
	err := b.Wait(cctx, 2)
	if !errors.Is(err, cause) {
		t.Errorf("cancelled Wait = %v; want the cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled Wait took %s", d)
	}
}

func testConcurrentStart(t *testing.T, s Store) {
	a := s.Open(t, false)
	const n, rounds = 8, 10
	handles := make([]queue.Backend, n)
	for i := range handles {
		handles[i] = s.Open(t, false)
	}
	for r := range rounds {
		id := fmt.Sprintf("job%d", r)
		enq := MustAppend(t, a, Enq(id))[0]
		var wg sync.WaitGroup
		results := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, results[i] = handles[i].Append(bg, []queue.Proposal{Ev(queue.EventStarted, id, fmt.Sprintf("w%d", i), enq.Seq)})
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, queue.ErrStale):
				t.Errorf("%s: racer %d: %v; want success or ErrStale", id, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d racers started the attempt; want exactly 1", id, won)
		}
	}
	starts := map[string]int{}
	for _, ev := range ReadAll(t, a, 0) {
		if ev.Type == queue.EventStarted {
			starts[ev.Task]++
		}
	}
	for id, c := range starts {
		if c != 1 {
			t.Errorf("%s has %d started events; want 1", id, c)
		}
	}
	if len(starts) != rounds {
		t.Errorf("%d tasks started; want %d", len(starts), rounds)
	}
}

func testConcurrentDisjoint(t *testing.T, s Store) {
	shared := s.Open(t, false)
	const writers, each = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		b := shared
		if w%2 == 1 {
			b = s.Open(t, false)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("w%d", w)
			evs, err := b.Append(bg, []queue.Proposal{Enq(id)})
			if err != nil {
				errs <- err
				return
			}
			last := evs[0].Seq
			for i := 1; i < each; i++ {
				evs, err := b.Append(bg, []queue.Proposal{Ev(queue.EventCancelRequested, id, "", last)})
				if err != nil {
					errs <- fmt.Errorf("%s append %d: %w", id, i, err)
					return
				}
				last = evs[0].Seq
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	evs := ReadAll(t, shared, 0)
	if len(evs) != writers*each {
		t.Fatalf("log = %d events; want %d", len(evs), writers*each)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d: sequences must be gapless", i, ev.Seq)
		}
	}
}

// build appends a small history and returns the replayed state.
func build(t *testing.T, b queue.Backend) *queue.State {
	t.Helper()
	st := queue.NewState()
	apply := func(evs []*queue.Event) {
		for _, ev := range evs {
			if err := st.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"done", "running", "queued", "failed"} {
		apply(MustAppend(t, b, Enq(id)))
	}
	last := func(id string) uint64 { return st.Task(id).LastSeq }
	apply(MustAppend(t, b, Ev(queue.EventStarted, "done", "w1", last("done"))))
	apply(MustAppend(t, b, Ev(queue.EventTrace, "done", "", last("done"))))
	apply(MustAppend(t, b, Ev(queue.EventSucceeded, "done", "", last("done"))))
	apply(MustAppend(t, b, Ev(queue.EventStarted, "running", "w2", last("running"))))
	fail := Ev(queue.EventTrace, "failed", "", 0)
	fail.Event.Trace.Status, fail.Event.Trace.ExitCode = execx.StatusFailed, 3
	apply(MustAppend(t, b, Ev(queue.EventStarted, "failed", "w1", last("failed"))))
	fail.Expect = last("failed")
	apply(MustAppend(t, b, fail))
	apply(MustAppend(t, b, Ev(queue.EventFailed, "failed", "", last("failed"))))
	return st
}

// tasksOf is the state's tasks in their stored form, without the snapshot
// header (so states at different sequences compare).
func tasksOf(st *queue.State) string {
	enc := queue.EncodeSnapshot(st.Snapshot(t0))
	lines := strings.Split(string(enc), "\n")
	return strings.Join(lines[1:len(lines)-2], "\n")
}

func replay(t *testing.T, b queue.Backend) *queue.State {
	t.Helper()
	q, err := queue.Inspect(bg, b)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	var st *queue.State
	q.View(bg, func(s *queue.State) error {
		st, _ = queue.NewStateFrom(s.Snapshot(t0))
		return nil
	})
	return st
}

func testCompact(t *testing.T, s Store) {
	b := s.Open(t, false)
	st := build(t, b)
	snap := st.Snapshot(time.Now())
	if err := b.Compact(bg, snap); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	got, err := b.Snapshot(bg)
	if err != nil || got == nil {
		t.Fatalf("Snapshot after Compact = %v, %v", got, err)
	}
	if !bytes.Equal(queue.EncodeSnapshot(got), queue.EncodeSnapshot(snap)) {
		t.Errorf("Snapshot() differs from the snapshot compacted")
	}
	// Reading from before the snapshot says where the log now starts.
	err = b.Read(bg, 0, func(*queue.Event) error { return nil })
	var ce *queue.CompactedError
	if !errors.As(err, &ce) || ce.First != snap.Seq+1 {
		t.Fatalf("Read(0) after Compact = %v; want a CompactedError with First %d", err, snap.Seq+1)
	}
	// Snapshot plus the rest replays to the same tasks, on any handle.
	for _, h := range []queue.Backend{b, s.Open(t, false), s.Open(t, true)} {
		if got := tasksOf(replay(t, h)); got != tasksOf(st) {
			t.Errorf("replay after Compact:\n%s\nwant\n%s", got, tasksOf(st))
		}
	}
	// Conditions still hold for tasks whose history was compacted away: the
	// next event expecting the task's latest is accepted, and one expecting
	// no task at all is refused.
	_, err = b.Append(bg, []queue.Proposal{Enq("done")})
	wantStale(t, err, "done", 0, st.Task("done").LastSeq)
	_, err = b.Append(bg, []queue.Proposal{Ev(queue.EventStarted, "queued", "w9", 0)})
	wantStale(t, err, "queued", 0, st.Task("queued").LastSeq)
	stale := Ev(queue.EventTrace, "running", "", st.Task("running").LastSeq-1)
	_, err = b.Append(bg, []queue.Proposal{stale})
	wantStale(t, err, "running", st.Task("running").LastSeq-1, st.Task("running").LastSeq)
	MustAppend(t, b, Ev(queue.EventStarted, "queued", "w9", st.Task("queued").LastSeq))
	MustAppend(t, b, Ev(queue.EventTrace, "running", "", st.Task("running").LastSeq))
	// An older snapshot than the newest is stale.
	older := *snap
	older.Seq--
	if err := b.Compact(bg, &older); !errors.Is(err, queue.ErrStale) {
		t.Errorf("Compact with an older snapshot: %v; want ErrStale", err)
	}
	// A second compaction moves the base on; readers follow it.
	st2 := replay(t, b)
	snap2 := st2.Snapshot(time.Now())
	if err := b.Compact(bg, snap2); err != nil {
		t.Fatalf("second Compact: %v", err)
	}
	if got, _ := b.Snapshot(bg); got == nil || got.Seq != snap2.Seq {
		t.Fatalf("Snapshot after the second Compact is at %v; want %d", got, snap2.Seq)
	}
	MustAppend(t, b, Enq("after"))
	want := replay(t, s.Open(t, false))
	if want.Task("after") == nil || want.Task("queued").State != queue.StateRunning || want.Task("running").Trace == nil {
		t.Errorf("state after two compactions lost events: %s", tasksOf(want))
	}
	rep, err := b.Check(bg)
	if err != nil {
		t.Fatalf("Check after compactions: %v", err)
	}
	if rep.SnapshotSeq != snap2.Seq || rep.LastSeq <= snap2.Seq {
		t.Errorf("Check = %+v; want snapshot %d and events after it", rep, snap2.Seq)
	}
}

func testLeases(t *testing.T, s Store) {
	a, b := s.Open(t, false), s.Open(t, false)
	if alive, err := b.Alive(bg, "w1"); err != nil || alive {
		t.Fatalf("Alive before any lease = %v, %v", alive, err)
	}
	l, err := a.AcquireLease(bg, "w1", 5*time.Second)
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if alive, err := b.Alive(bg, "w1"); err != nil || !alive {
		t.Fatalf("Alive of a held lease, from another handle = %v, %v", alive, err)
	}
	if !l.Held() {
		t.Error("Held of a lease just acquired = false")
	}
	if alive, _ := b.Alive(bg, "w2"); alive {
		t.Error("Alive of another worker = true")
	}
	if _, err := b.AcquireLease(bg, "w1", 5*time.Second); exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("a second lease on a live worker id: %v; want a conflict (exit 3)", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("a healthy lease is lost")
	default:
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if alive, err := b.Alive(bg, "w1"); err != nil || alive {
		t.Errorf("Alive after Release = %v, %v", alive, err)
	}
	// The id can be taken again.
	l2, err := b.AcquireLease(bg, "w1", 5*time.Second)
	if err != nil {
		t.Fatalf("AcquireLease after Release: %v", err)
	}
	if alive, _ := a.Alive(bg, "w1"); !alive {
		t.Error("Alive of the second holder = false")
	}
	l2.Release()
	if _, err := a.AcquireLease(bg, "bad/id", time.Minute); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a worker id with a slash: %v; want exit 2", err)
	}
}

func testReadOnly(t *testing.T, s Store) {
	r := s.Open(t, true)
	if !r.ReadOnly() {
		t.Fatal("ReadOnly() = false for a read-only handle")
	}
	if got := ReadAll(t, r, 0); len(got) != 0 {
		t.Errorf("a missing queue reads %d events", len(got))
	}
	if snap, err := r.Snapshot(bg); snap != nil || err != nil {
		t.Errorf("Snapshot of a missing queue = %v, %v", snap, err)
	}
	if alive, err := r.Alive(bg, "w1"); alive || err != nil {
		t.Errorf("Alive on a missing queue = %v, %v", alive, err)
	}
	if _, err := r.Check(bg); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("Check of a missing queue: %v; want exit 4", err)
	}
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	err := r.Wait(ctx, 0)
	cancel()
	if err == nil {
		t.Error("Wait on an empty missing queue returned nil before its deadline")
	}
	if _, err := r.Append(bg, []queue.Proposal{Enq("a")}); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("Append read-only: %v; want ErrReadOnly", err)
	}
	if err := r.Compact(bg, &queue.Snapshot{}); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("Compact read-only: %v; want ErrReadOnly", err)
	}
	if _, err := r.AcquireLease(bg, "w1", 5*time.Second); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("AcquireLease read-only: %v; want ErrReadOnly", err)
	}
	if _, err := queue.Open(bg, r); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("queue.Open on a read-only handle: %v; want ErrReadOnly", err)
	}
	if s.Exists(t) {
		t.Fatal("a read-only handle created the queue")
	}
	// Once a writer creates the queue, the same read-only handle sees it.
	w := s.Open(t, false)
	MustAppend(t, w, Enq("a"), Enq("b"))
	if got := Seqs(ReadAll(t, r, 0)); got != "1,2" {
		t.Errorf("read-only handle after a writer: %s; want 1,2", got)
	}
	if rep, err := r.Check(bg); err != nil || rep.LastSeq != 2 {
		t.Errorf("Check read-only = %+v, %v", rep, err)
	}
	if _, err := r.Append(bg, []queue.Proposal{Enq("c")}); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("Append read-only on an existing queue: %v", err)
	}
	if got := ReadAll(t, w, 0); len(got) != 2 {
		t.Errorf("the log holds %d events after refused writes; want 2", len(got))
	}
}

func testCheck(t *testing.T, s Store) {
	b := s.Open(t, false)
	for _, id := range []string{"a", "b", "c"} {
		MustAppend(t, b, Enq(id))
	}
	rep, err := b.Check(bg)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if rep.FirstSeq != 1 || rep.LastSeq != 3 || rep.Events != 3 || rep.TornTail != nil || rep.SnapshotSeq != 0 || rep.Location == "" || rep.Bytes <= 0 {
		t.Errorf("Check = %+v; want events 1 to 3, no snapshot, no torn tail", rep)
	}
	// Check writes nothing.
	if got := ReadAll(t, b, 0); len(got) != 3 {
		t.Errorf("log after Check = %d events", len(got))
	}
}

// ---- the shared queue on top of the backend --------------------------------

func newTask(t *testing.T, argv ...string) *execx.Task {
	t.Helper()
	task, err := queue.ArgvTask(argv)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func testQueueEnqueue(t *testing.T, s Store) {
	b := s.Open(t, false)
	q := queue.New(b)
	task, other := newTask(t, "true"), newTask(t, "false")
	r := []queue.EnqueueRequest{{ID: "a", Task: task, MaxAttempts: 2}}
	out, err := q.Enqueue(bg, r)
	if err != nil || !out[0].Created {
		t.Fatalf("first enqueue: %+v %v", out, err)
	}
	// Another process's view: idempotent for the same manifest, a conflict
	// for another, and a batch with a conflict appends nothing.
	q2 := queue.New(s.Open(t, false))
	if out, err = q2.Enqueue(bg, r); err != nil || out[0].Created {
		t.Errorf("same id, same manifest: %+v %v; want an idempotent success", out, err)
	}
	if _, err = q2.Enqueue(bg, []queue.EnqueueRequest{{ID: "a", Task: other, MaxAttempts: 2}}); exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("same id, other manifest: %v; want exit 3", err)
	}
	before := len(ReadAll(t, b, 0))
	_, err = q2.Enqueue(bg, []queue.EnqueueRequest{{ID: "b", Task: task, MaxAttempts: 1}, {ID: "a", Task: other, MaxAttempts: 2}})
	if exitcode.Of(err) != exitcode.Conflict || len(ReadAll(t, b, 0)) != before {
		t.Errorf("batch with a conflict: %v; the log grew from %d", err, before)
	}
	// Generated ids, cancel and status through the queue.
	out, err = q.Enqueue(bg, []queue.EnqueueRequest{{Task: task, MaxAttempts: 1}, {Task: task, MaxAttempts: 1}})
	if err != nil || len(out) != 2 || out[0].Status.ID == out[1].Status.ID {
		t.Fatalf("generated ids: %+v %v", out, err)
	}
	ts, err := q2.Cancel(bg, out[0].Status.ID)
	if err != nil || ts.State != queue.StateCancelled {
		t.Errorf("Cancel queued = %+v, %v", ts, err)
	}
	if _, err := q.Cancel(bg, out[0].Status.ID); exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("Cancel of a cancelled task: %v; want exit 3", err)
	}
	if _, err := q.Status(bg, "nope"); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("Status of an unknown task: %v; want exit 4", err)
	}
}

// forge appends a task's events as a worker that is not alive would have.
func forge(t *testing.T, b queue.Backend, q *queue.Queue, id, worker string, types ...queue.EventType) {
	t.Helper()
	for _, typ := range types {
		var last uint64
		q.View(bg, func(st *queue.State) error { last = st.Task(id).LastSeq; return nil })
		MustAppend(t, b, Ev(typ, id, worker, last))
	}
}

func testQueueRecovery(t *testing.T, s Store) {
	b := s.Open(t, false)
	q := queue.New(b)
	for _, id := range []string{"untraced", "traced", "cancelreq", "live"} {
		if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: id, Task: newTask(t, "true"), MaxAttempts: 3}}); err != nil {
			t.Fatal(err)
		}
	}
	forge(t, b, q, "untraced", "ghost", queue.EventStarted)
	forge(t, b, q, "traced", "ghost", queue.EventStarted, queue.EventTrace)
	forge(t, b, q, "cancelreq", "ghost", queue.EventStarted, queue.EventCancelRequested)
	l, err := s.Open(t, false).AcquireLease(bg, "alive", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	forge(t, b, q, "live", "alive", queue.EventStarted)

	// Inspect recovers nothing.
	if _, err := queue.Inspect(bg, s.Open(t, true)); err != nil {
		t.Fatal(err)
	}
	if ts, _ := q.Status(bg, "untraced"); ts.State != queue.StateRunning {
		t.Fatalf("Inspect recovered a task: %+v", ts)
	}
	q2, err := queue.Open(bg, s.Open(t, false))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]queue.TaskState{"untraced": queue.StateQueued, "traced": queue.StateSucceeded, "cancelreq": queue.StateCancelled, "live": queue.StateRunning}
	for id, st := range want {
		if ts, _ := q2.Status(bg, id); ts.State != st || ts.Attempts != 1 {
			t.Errorf("%s after Open: %s, attempts %d; want %s, attempts 1", id, ts.State, ts.Attempts, st)
		}
	}
	// A second recoverer (another process) finds nothing left to do, and
	// appends nothing twice.
	before := len(ReadAll(t, b, 0))
	if evs, err := queue.New(s.Open(t, false)).Recover(bg, ""); err != nil || len(evs) != 0 {
		t.Errorf("second Recover = %v, %v; want nothing", evs, err)
	}
	if got := len(ReadAll(t, b, 0)); got != before {
		t.Errorf("second Recover appended %d events", got-before)
	}
}

// RunCounter is a RunFunc that runs nothing and counts runs per task and
// attempt.
type RunCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

// Run implements execx.RunFunc.
func (c *RunCounter) Run(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[task.ID+"/"+task.Env.Set[worker.EnvAttempt]]++
	c.mu.Unlock()
	now := time.Now()
	return &execx.Result{TaskID: task.ID, Program: task.Program, Status: execx.StatusSucceeded, StartedAt: now, EndedAt: now}, nil
}

// Runs returns "task/attempt xN" entries for runs that happened more than
// once, and the total.
func (c *RunCounter) Runs() (twice []string, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.runs {
		total += n
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s x%d", k, n))
		}
	}
	sort.Strings(twice)
	return twice, total
}

func testQueueWorkers(t *testing.T, s Store) {
	const tasks, workers = 60, 3
	q := queue.New(s.Open(t, false))
	reqs := make([]queue.EnqueueRequest, tasks)
	for i := range reqs {
		reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%03d", i), Task: newTask(t, "true"), MaxAttempts: 1}
	}
	if _, err := q.Enqueue(bg, reqs); err != nil {
		t.Fatal(err)
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var rc RunCounter
	var wg sync.WaitGroup
	errs := make([]error, workers)
	stats := make([]worker.Stats, workers)
	for w := range workers {
		wq, err := queue.Open(bg, s.Open(t, false))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[w], errs[w] = worker.Work(bg, wq, worker.Config{
				ID: fmt.Sprintf("worker%d", w), Policy: pol, Concurrency: 2, Mode: worker.Drain,
				Poll: 50 * time.Millisecond, Lease: 5 * time.Second, Run: rc.Run,
			})
		}()
	}
	wg.Wait()
	claimed := 0
	for w := range workers {
		if errs[w] != nil {
			t.Errorf("worker %d: %v", w, errs[w])
		}
		claimed += stats[w].Claimed
	}
	twice, total := rc.Runs()
	if len(twice) > 0 || total != tasks || claimed != tasks {
		t.Errorf("runs: %d in all, %d claimed, repeated %v; want each of %d tasks run once", total, claimed, twice, tasks)
	}
	st := replay(t, s.Open(t, true))
	if c := st.Counts(); c[queue.StateSucceeded] != tasks {
		debugDump(t, s.Open(t, true), st)
		t.Errorf("counts after the drain = %v; want %d succeeded", c, tasks)
	}
	// Every attempt has its trace before its terminal event.
	traced := map[string]bool{}
	for _, ev := range ReadAll(t, s.Open(t, true), 0) {
		switch ev.Type {
		case queue.EventTrace:
			traced[ev.Task] = true
		case queue.EventSucceeded:
			if !traced[ev.Task] {
				t.Errorf("task %s succeeded without a trace before it", ev.Task)
			}
		}
	}
}

func debugDump(t *testing.T, b queue.Backend, st *queue.State) {
	st.Running(func(tk *queue.Task) {
		for _, ev := range ReadAll(t, b, 0) {
			if ev.Task == tk.ID {
				t.Logf("%s", record(ev))
			}
		}
	})
}

// testCompactWhileWorking: workers drain a queue while another handle
// compacts it again and again. Readers meet compactions in the middle of
// their reads, conditions are checked against compacted tasks, and still
// every task runs once and the log replays.
func testCompactWhileWorking(t *testing.T, s Store) {
	const tasks, workers = 120, 3
	q := queue.New(s.Open(t, false))
	reqs := make([]queue.EnqueueRequest, tasks)
	for i := range reqs {
		reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%03d", i), Task: newTask(t, "true"), MaxAttempts: 1}
	}
	if _, err := q.Enqueue(bg, reqs); err != nil {
		t.Fatal(err)
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var rc RunCounter
	slow := func(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
		time.Sleep(2 * time.Millisecond)
		return rc.Run(ctx, p, task, opt)
	}
	compactor := queue.New(s.Open(t, false))
	stop := make(chan struct{})
	compactions := make(chan int, 1)
	go func() {
		n := 0
		defer func() { compactions <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := compactor.Compact(bg); err != nil {
				t.Errorf("Compact while working: %v", err)
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wq, err := queue.Open(bg, s.Open(t, false))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := worker.Work(bg, wq, worker.Config{
				ID: fmt.Sprintf("worker%d", w), Policy: pol, Concurrency: 2, Mode: worker.Drain,
				Poll: 20 * time.Millisecond, Lease: 5 * time.Second, Run: slow,
			}); err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	n := <-compactions
	twice, total := rc.Runs()
	if len(twice) > 0 || total != tasks {
		t.Errorf("runs: %d in all, repeated %v; want each of %d tasks once", total, twice, tasks)
	}
	st := replay(t, s.Open(t, true))
	if c := st.Counts(); c[queue.StateSucceeded] != tasks {
		t.Errorf("after %d compactions: counts %v; want %d succeeded", n, c, tasks)
	}
	if _, err := s.Open(t, true).Check(bg); err != nil {
		t.Errorf("Check: %v", err)
	}
	t.Logf("%d compactions ran during the drain", n)
}

// LateEvents returns, as "seq type task" strings, every event about a
// running attempt (trace, terminal, cancel request, requeue) that does not
// belong to the task's current claim when it was appended: what a zombie
// worker's old run would leave. A fenced log has none.
func LateEvents(evs []*queue.Event) []string {
	claim := map[string]uint64{}
	var late []string
	for _, ev := range evs {
		switch ev.Type {
		case queue.EventStarted:
			claim[ev.Task] = ev.Seq
			continue
		case queue.EventTrace, queue.EventSucceeded, queue.EventFailed, queue.EventCancelRequested, queue.EventRequeued:
		case queue.EventCancelled:
			if claim[ev.Task] == 0 && ev.Claim == 0 {
				continue // a queued task cancelled
			}
		default:
			continue
		}
		if cur := claim[ev.Task]; cur == 0 || ev.Claim != cur {
			late = append(late, fmt.Sprintf("%d %s %s (claim %d, current %d)", ev.Seq, ev.Type, ev.Task, ev.Claim, cur))
		}
		if ev.Type != queue.EventTrace && ev.Type != queue.EventCancelRequested {
			claim[ev.Task] = 0
		}
	}
	return late
}

// testZombieFence: a worker whose task was recovered behind its back (as
// another worker does once it believes the first one dead: a requeue of
// the claim) neither claims that task again while its old run is still
// winding down, nor records the old run's result once it ends; the task
// is then claimed afresh and only the new claim's result is recorded.
func testZombieFence(t *testing.T, s Store) {
	b := s.Open(t, false)
	q := queue.New(b)
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "x", Task: newTask(t, "true"), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	zRan := make(chan struct{})
	var mu sync.Mutex
	runs, running := map[string]int{}, map[string]int{}
	overlap := false
	run := func(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
		mu.Lock()
		runs[task.ID]++
		n := runs[task.ID]
		running[task.ID]++
		overlap = overlap || running[task.ID] > 1
		mu.Unlock()
		defer func() { mu.Lock(); running[task.ID]--; mu.Unlock() }()
		now := time.Now()
		res := &execx.Result{TaskID: task.ID, Program: task.Program, Status: execx.StatusSucceeded, StartedAt: now, EndedAt: now, DurationMS: 1}
		switch {
		case task.ID == "x" && n == 1:
			close(started)
			<-release // the old run ends on its own, result in hand
			res.DurationMS = 4242
		case task.ID == "z":
			close(zRan)
		}
		return res, nil
	}
	wq, err := queue.Open(bg, s.Open(t, false))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(bg)
	defer stop()
	workErr := make(chan error, 1)
	go func() {
		_, err := worker.Work(ctx, wq, worker.Config{
			ID: "zombie", Policy: pol, Concurrency: 2, Mode: worker.Serve,
			Poll: 20 * time.Millisecond, Lease: 5 * time.Second, Run: run,
		})
		workErr <- err
	}()
	<-started
	// Recovery behind the worker's back: x's claim is requeued.
	var last, claim uint64
	q.View(bg, func(st *queue.State) error {
		x := st.Task("x")
		last, claim = x.LastSeq, x.Claim
		return nil
	})
	if claim == 0 {
		t.Fatal("a running task has no claim")
	}
	MustAppend(t, b, queue.Proposal{Event: &queue.Event{Time: t0, Type: queue.EventRequeued, Task: "x", Attempt: 1, Worker: "zombie", Claim: claim, Reason: "test: recovered behind the worker's back"}, Expect: last})
	// z is enqueued after the requeue: once it has run, the worker has
	// caught up on the requeue and chosen between x (older) and z.
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "z", Task: newTask(t, "true"), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-zRan:
	case err := <-workErr:
		t.Fatalf("worker stopped: %v", err)
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ts, err := q.Status(bg, "x")
		if err != nil {
			t.Fatal(err)
		}
		if ts.State == queue.StateSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("x never succeeded: %+v", ts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-workErr
	evs := ReadAll(t, b, 0)
	if late := LateEvents(evs); len(late) > 0 {
		t.Errorf("late events recorded: %v", late)
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Error("the worker claimed x again while its old run of x was still running")
	}
	if runs["x"] != 2 {
		t.Errorf("x ran %d times; want 2 (the recovered run, then the new claim)", runs["x"])
	}
	for _, ev := range evs {
		if ev.Type == queue.EventTrace && ev.Task == "x" && ev.Trace.DurationMS == 4242 {
			t.Errorf("the old run's result was recorded: %s", record(ev))
		}
	}
}

// testFollowBehindCompaction: a follower that falls two compactions
// behind (it is busy while events are appended and folded into snapshots
// twice) either reads every event in order or stops with a GapError
// (exit 3) naming what it would miss; it never skips events silently.
func testFollowBehindCompaction(t *testing.T, s Store) {
	b := s.Open(t, false)
	q := queue.New(b)
	other := queue.New(s.Open(t, false))
	enq := func(qq *queue.Queue, id string) {
		t.Helper()
		if _, err := qq.Enqueue(bg, []queue.EnqueueRequest{{ID: id, Task: newTask(t, "true"), MaxAttempts: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		enq(q, id)
	}
	var got []uint64
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	err := queue.Follow(ctx, s.Open(t, true), queue.FollowOptions{Follow: true}, func(ev *queue.Event) error {
		got = append(got, ev.Seq)
		if len(got) == 1 {
			for _, id := range []string{"d", "e"} {
				enq(other, id)
				if _, err := other.Compact(bg); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ev.Type == queue.EventEnqueued && ev.Task == "e" {
			cancel() // read everything: done
		}
		return nil
	})
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("the follower skipped from %d to %d (got %v, err %v)", got[i-1], got[i], got, err)
		}
	}
	t.Logf("read %v, then %v", got, err)
	var gap *queue.GapError
	switch {
	case errors.As(err, &gap):
		if exitcode.Of(err) != exitcode.Conflict || gap.From != got[len(got)-1]+1 {
			t.Errorf("gap error %v (exit %d) after %v; want exit 3 from the next unread event", err, exitcode.Of(err), got)
		}
	case ctx.Err() != nil:
		// Read everything in order.
	default:
		t.Fatalf("Follow = %v after %v; want every event or a GapError", err, got)
	}
}
