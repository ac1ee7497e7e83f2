package file

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// digest is the task state of a queue, independent of sequence numbers.
func digest(t *testing.T, b queue.Backend) []byte {
	t.Helper()
	q, err := queue.Inspect(ctx, b)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	var out []byte
	q.View(ctx, func(st *queue.State) error {
		snap := st.Snapshot(epoch)
		snap.Seq = 0
		out = queue.EncodeSnapshot(snap)
		return nil
	})
	return out
}

// populate builds a queue with tasks in every state through the queue's own
// operations.
func populate(t *testing.T, b queue.Backend) {
	t.Helper()
	q := queue.New(b)
	task, _ := queue.ArgvTask([]string{"true"})
	var reqs []queue.EnqueueRequest
	for i := range 6 {
		reqs = append(reqs, queue.EnqueueRequest{ID: fmt.Sprintf("t%d", i), Task: task, MaxAttempts: 2})
	}
	if _, err := q.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	step := func(p queue.Proposal) {
		t.Helper()
		if _, err := b.Append(ctx, []queue.Proposal{p}); err != nil {
			t.Fatal(err)
		}
	}
	last := func(id string) uint64 {
		var s uint64
		q.View(ctx, func(st *queue.State) error { s = st.Task(id).LastSeq; return nil })
		return s
	}
	run := func(id string, status execx.Status) {
		step(queue.Proposal{Event: &queue.Event{Time: epoch, Type: queue.EventStarted, Task: id, Attempt: 1, Worker: "w9"}, Expect: last(id)})
		if status != "" {
			step(queue.Proposal{Event: &queue.Event{Time: epoch, Type: queue.EventTrace, Task: id, Attempt: 1, Trace: &queue.Trace{Status: status, ExitCode: 1}}, Expect: last(id)})
			step(queue.Proposal{Event: &queue.Event{Time: epoch, Type: queue.Outcome(status), Task: id, Attempt: 1}, Expect: last(id)})
		}
	}
	run("t0", execx.StatusSucceeded)
	run("t1", execx.StatusFailed)
	run("t2", "") // left running
	if _, err := q.Cancel(ctx, "t3"); err != nil {
		t.Fatal(err)
	}
	run("t4", execx.StatusFailed)
	if _, err := q.Retry(ctx, "t4"); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600)
	}
	return dst
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	populate(t, b)
	want := digest(t, b)
	before, _ := os.ReadFile(filepath.Join(dir, LogName))

	q := queue.New(b)
	snap, err := q.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, LogName))
	if len(after) >= len(before) {
		t.Errorf("log is %d bytes after compaction, %d before", len(after), len(before))
	}
	if got := digest(t, open(t, dir, Options{ReadOnly: true})); !bytes.Equal(got, want) {
		t.Errorf("state after compaction differs:\n%s\nwant\n%s", got, want)
	}
	// The events the snapshot covers are gone from the log.
	var ce *queue.CompactedError
	if err := b.Read(ctx, 0, func(*queue.Event) error { return nil }); !errors.As(err, &ce) || ce.First != snap.Seq+1 {
		t.Errorf("Read(0) after compaction = %v; want compacted before %d", err, snap.Seq+1)
	}
	// Appends continue after the compacted event; replay still works from
	// a fresh process's point of view, and conditions still hold.
	q2 := queue.New(open(t, dir, Options{}))
	if _, err := q2.Retry(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := q2.Retry(ctx, "t0"); err == nil {
		t.Error("retry of a succeeded task after compaction went through")
	}
	rep, err := open(t, dir, Options{ReadOnly: true}).Check(ctx)
	if err != nil || rep.SnapshotSeq != snap.Seq || rep.FirstSeq != snap.Seq+1 {
		t.Errorf("Check after compaction = %+v, %v", rep, err)
	}
	// A second compaction with nothing new is fine too.
	if _, err := queue.New(open(t, dir, Options{})).Compact(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCompactCrashAtEveryStep stops a compaction at each of its steps, as a
// crash would, and checks that the directory replays to the same state,
// accepts appends, and that a later compaction completes.
func TestCompactCrashAtEveryStep(t *testing.T) {
	base := t.TempDir()
	populate(t, open(t, base, Options{}))
	want := digest(t, open(t, base, Options{ReadOnly: true}))
	crash := errors.New("crash")
	for _, step := range []string{"snapshot", "segment", "switched"} {
		t.Run(step, func(t *testing.T) {
			dir := copyDir(t, base)
			b := open(t, dir, Options{hook: func(s string) error {
				if s == step {
					return crash
				}
				return nil
			}})
			if _, err := queue.New(b).Compact(ctx); !errors.Is(err, crash) {
				t.Fatalf("Compact = %v; want the injected crash", err)
			}
			b.Close()
			if got := digest(t, open(t, dir, Options{ReadOnly: true})); !bytes.Equal(got, want) {
				t.Fatalf("state after a crash at %s differs:\n%s\nwant\n%s", step, got, want)
			}
			if rep, err := open(t, dir, Options{ReadOnly: true}).Check(ctx); err != nil {
				t.Fatalf("Check after a crash at %s: %v (%+v)", step, err, rep)
			}
			w := open(t, dir, Options{})
			q := queue.New(w)
			if _, err := q.Retry(ctx, "t1"); err != nil {
				t.Fatalf("append after a crash at %s: %v", step, err)
			}
			if _, err := q.Compact(ctx); err != nil {
				t.Fatalf("compaction after a crash at %s: %v", step, err)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if isTemp(e.Name()) {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// TestReaderFollowsCompaction: a reader that has read part of the log keeps
// reading across a compaction done by another process, losing nothing and
// seeing nothing twice.
func TestReaderFollowsCompaction(t *testing.T) {
	dir := t.TempDir()
	w := open(t, dir, Options{})
	for i := range 5 {
		appendAll(t, w, enq(fmt.Sprintf("a%d", i)))
	}
	r := open(t, dir, Options{ReadOnly: true})
	got := readAll(t, r, 0)
	for i := range 3 {
		appendAll(t, w, enq(fmt.Sprintf("b%d", i)))
	}
	other := open(t, dir, Options{})
	if _, err := queue.New(other).Compact(ctx); err != nil {
		t.Fatal(err)
	}
	appendAll(t, other, enq("c0"))
	got = append(got, readAll(t, r, got[len(got)-1].Seq)...)
	if s := seqs(got); s != "1,2,3,4,5,6,7,8,9,10" {
		t.Errorf("reader saw %s across the compaction; want 1..10", s)
	}
	if got[8].Type != queue.EventCompacted || got[8].Through != 8 {
		t.Errorf("event 9 = %+v; want compacted through 8", got[8])
	}
}
