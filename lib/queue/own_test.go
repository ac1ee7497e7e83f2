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

// countingBackend counts the events Read delivers: what a Queue reads back
// from the log.
type countingBackend struct {
	*file.Backend
	read int
}

func (c *countingBackend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	return c.Backend.Read(ctx, after, func(ev *queue.Event) error {
		c.read++
		return fn(ev)
	})
}

// TestOwnAppendsAreNotReadBack: a queue keeps its view current from its
// own appends: enqueue, claim (one and several at once), trace and finish
// read nothing back from the log, and the view equals a fresh replay. An
// append by another process in between is read from the tail, and only it.
func TestOwnAppendsAreNotReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	fb, err := file.Open(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	b := &countingBackend{Backend: fb}
	q, err := queue.Open(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := fb.AcquireLease(bg, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
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
	ro, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	fresh, err := queue.Inspect(bg, ro)
	if err != nil {
		t.Fatal(err)
	}
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
