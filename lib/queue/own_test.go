package queue_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// countingBackend counts what a Queue reads back from its backend: the
// events Read delivers (read) and the Read calls, the catch-ups (calls).
type countingBackend struct {
	*file.Backend
	read, calls int
}

func (c *countingBackend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	c.calls++
	return c.Backend.Read(ctx, after, func(ev *queue.Event) error {
		c.read++
		return fn(ev)
	})
}

// openCounted opens a file queue in a temp dir through a countingBackend,
// with a lease held by worker "w"; all closed when the test ends.
func openCounted(t *testing.T) (q *queue.Queue, fb *file.Backend, b *countingBackend, dir string, lease queue.Lease) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "q")
	fb, err := file.Open(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fb.Close() })
	b = &countingBackend{Backend: fb}
	if q, err = queue.Open(bg, b); err != nil {
		t.Fatal(err)
	}
	if lease, err = fb.AcquireLease(bg, "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Release() })
	return q, fb, b, dir, lease
}

// TestOwnAppendsAreNotReadBack: a queue keeps its view current from its
// own appends: enqueue, claim (one and several at once), trace and finish
// read nothing back from the log, and the view equals a fresh replay. An
// append by another process in between is read from the tail, and only it.
func TestOwnAppendsAreNotReadBack(t *testing.T) {
	q, fb, b, dir, lease := openCounted(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: id, Task: benchTask, MaxAttempts: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	tr := &queue.Trace{Status: execx.StatusSucceeded}
	t1, err := q.Claim(bg, "w", nil)
	if err != nil || t1 == nil || t1.ID != "a" {
		t.Fatalf("Claim = %+v, %v", t1, err)
	}
	syncs := fb.Syncs()
	ts, err := q.ClaimN(bg, "w", map[string]bool{"a": true}, 2)
	if err != nil || len(ts) != 2 || ts[0].ID != "b" || ts[1].ID != "c" {
		t.Fatalf("ClaimN = %+v, %v; want b and c", ts, err)
	}
	if n := fb.Syncs() - syncs; n != 1 {
		t.Errorf("ClaimN of 2 ran %d syncs; want 1 (one commit)", n)
	}
	for _, run := range append([]*queue.Task{t1}, ts...) {
		if term, err := q.Finish(bg, lease, "w", run, tr); err != nil || term != queue.EventSucceeded {
			t.Fatalf("Finish(%s) = %v, %v", run.ID, term, err)
		}
	}
	if b.read != 0 {
		t.Errorf("the queue read %d of its own events back from the log; want 0", b.read)
	}

	// Another process appends: the tail is read, and nothing else.
	other, err := file.Open(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oq, err := queue.Open(bg, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oq.Cancel(bg, "d"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	st, err := q.Status(bg, "d")
	if err != nil || st.State != queue.StateCancelled {
		t.Fatalf("status of d = %+v, %v", st, err)
	}
	if b.read != 1 {
		t.Errorf("after another process's cancel the queue read %d events; want 1", b.read)
	}

	// The view equals a fresh replay.
	fresh := replay(t, dir)
	if q.Seq() != fresh.Seq() {
		t.Fatalf("view at %d; replay at %d", q.Seq(), fresh.Seq())
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		a, _ := q.Status(bg, id)
		f, _ := fresh.Status(bg, id)
		if !reflect.DeepEqual(a, f) {
			t.Errorf("task %s: view %+v; replay %+v", id, a, f)
		}
	}
}

// TestFinishDecidesOnItsOwnView: Finish records the trace and the result
// without reading the log when its view of the task is current (the
// append's condition is the check), and when another process changed
// the log meanwhile it still does what a caught-up view says: an event
// of another task in between (its own appends no longer continue the
// view) still gets both recorded, a cancel request for the task still
// lets the finished run record its trace and result, and a recovery by
// another process (the run is no longer the task's current claim)
// records nothing.
func TestFinishDecidesOnItsOwnView(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other func(t *testing.T, oq *queue.Queue, ob *file.Backend) // another process, between claim and Finish
		term  queue.EventType
		state queue.TaskState
		reads int // Read calls Finish makes
	}{
		{name: "alone", term: queue.EventSucceeded, state: queue.StateSucceeded, reads: 0},
		{name: "another task changed", other: func(t *testing.T, oq *queue.Queue, _ *file.Backend) {
			if _, err := oq.Cancel(bg, "b"); err != nil {
				t.Fatal(err)
			}
		}, term: queue.EventSucceeded, state: queue.StateSucceeded, reads: 1},
		{name: "cancel requested", other: func(t *testing.T, oq *queue.Queue, _ *file.Backend) {
			if _, err := oq.Cancel(bg, "a"); err != nil {
				t.Fatal(err)
			}
		}, term: queue.EventSucceeded, state: queue.StateSucceeded, reads: 1},
		{name: "recovered", other: func(t *testing.T, oq *queue.Queue, ob *file.Backend) {
			var ev *queue.Event
			var last uint64
			if err := oq.View(bg, func(st *queue.State) error {
				task := st.Task("a")
				ev, last = queue.RecoveryEvent(task, time.Now().UTC()), task.LastSeq
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := ob.Append(bg, []queue.Proposal{{Event: ev, Expect: last}}); err != nil {
				t.Fatal(err)
			}
		}, term: "", state: queue.StateQueued, reads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _, b, dir, lease := openCounted(t)
			if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "a", Task: benchTask, MaxAttempts: 1}, {ID: "b", Task: benchTask, MaxAttempts: 1}}); err != nil {
				t.Fatal(err)
			}
			run, err := q.Claim(bg, "w", nil)
			if err != nil || run == nil || run.ID != "a" {
				t.Fatalf("Claim = %+v, %v", run, err)
			}
			if tc.other != nil {
				ob, err := file.Open(dir, file.Options{})
				if err != nil {
					t.Fatal(err)
				}
				oq, err := queue.Inspect(bg, ob)
				if err != nil {
					t.Fatal(err)
				}
				tc.other(t, oq, ob)
				ob.Close()
			}
			b.calls = 0
			term, err := q.Finish(bg, lease, "w", run, &queue.Trace{Status: execx.StatusSucceeded})
			if err != nil || term != tc.term {
				t.Fatalf("Finish = %q, %v; want %q", term, err, tc.term)
			}
			if b.calls != tc.reads {
				t.Errorf("Finish read the log %d times; want %d", b.calls, tc.reads)
			}
			st, err := q.Status(bg, "a")
			if err != nil || st.State != tc.state {
				t.Fatalf("status of a = %+v, %v; want %s", st, err, tc.state)
			}
			// Whatever happened, the log says the same as the view.
			f, _ := replay(t, dir).Status(bg, "a")
			if !reflect.DeepEqual(st, f) {
				t.Errorf("view %+v; replay %+v", st, f)
			}
		})
	}
}
