package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("ARTQ_FILETEST_BATCH"); dir != "" {
		os.Exit(batchChild(dir))
	}
	if dir := os.Getenv("ARTQ_FILETEST_HOLDLOCK"); dir != "" {
		os.Exit(holdLockChild(dir))
	}
	goleak.VerifyTestMain(m)
}

var ctx = context.Background()

var manifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)

func enq(id string) queue.Proposal {
	return queue.Proposal{Event: &queue.Event{Time: time.Now().UTC(), Type: queue.EventEnqueued, Task: id, MaxAttempts: 1, Manifest: manifest}}
}

func open(t testing.TB, dir string, opts Options) *Backend {
	t.Helper()
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func appendAll(t testing.TB, b *Backend, ps ...queue.Proposal) []*queue.Event {
	t.Helper()
	evs, err := b.Append(ctx, ps)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return evs
}

func readAll(t testing.TB, b *Backend, after uint64) []*queue.Event {
	t.Helper()
	var out []*queue.Event
	if err := b.Read(ctx, after, func(ev *queue.Event) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out
}

func seqs(evs []*queue.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, fmt.Sprint(e.Seq))
	}
	return strings.Join(s, ",")
}

func listDir(t testing.TB, dir string) string {
	t.Helper()
	var names []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			names = append(names, fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size()))
		}
		return nil
	})
	return strings.Join(names, "\n")
}

func TestAppendRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	b := open(t, dir, Options{})
	evs := appendAll(t, b, enq("a"), enq("b"))
	if seqs(evs) != "1,2" {
		t.Fatalf("seqs = %s; want 1,2", seqs(evs))
	}
	appendAll(t, b, enq("c"))
	if got := seqs(readAll(t, b, 0)); got != "1,2,3" {
		t.Errorf("Read(0) = %s", got)
	}
	if got := seqs(readAll(t, b, 2)); got != "3" {
		t.Errorf("Read(2) = %s", got)
	}
	// Modes: directory 0700, files 0600.
	for _, p := range []string{dir, filepath.Join(dir, WorkersDir)} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v; want 0700", p, fi.Mode().Perm())
		}
	}
	for _, p := range []string{LogName, LockName} {
		if fi, _ := os.Stat(filepath.Join(dir, p)); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v; want 0600", p, fi.Mode().Perm())
		}
	}
}

func TestReadOnlyWritesNothing(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	ro := open(t, missing, Options{ReadOnly: true})
	if got := readAll(t, ro, 0); len(got) != 0 {
		t.Errorf("a missing queue reads %d events", len(got))
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only open created %s", missing)
	}
	if _, err := ro.Append(ctx, []queue.Proposal{enq("a")}); !errors.Is(err, queue.ErrReadOnly) {
		t.Errorf("read-only Append = %v", err)
	}

	dir := filepath.Join(root, "q")
	w := open(t, dir, Options{})
	appendAll(t, w, enq("a"))
	os.Remove(filepath.Join(dir, LockName))
	before := listDir(t, dir)
	r := open(t, dir, Options{ReadOnly: true})
	readAll(t, r, 0)
	if _, err := r.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Alive(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if after := listDir(t, dir); after != before {
		t.Errorf("read-only use changed the directory:\n%s\n---\n%s", before, after)
	}
}

func TestConditions(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	appendAll(t, b, enq("a"))
	start := func(expect uint64) queue.Proposal {
		return queue.Proposal{Event: &queue.Event{Time: time.Now(), Type: queue.EventStarted, Task: "a", Attempt: 1, Worker: "w"}, Expect: expect}
	}
	// A task that exists refuses an enqueue that expects none.
	cond := enq("a")
	cond.Any = false
	_, err := b.Append(ctx, []queue.Proposal{enq("x"), cond})
	var se *queue.StaleError
	if !errors.As(err, &se) || !errors.Is(err, queue.ErrStale) || se.Have != 1 {
		t.Fatalf("Append(duplicate) = %v; want stale with have 1", err)
	}
	if got := seqs(readAll(t, b, 0)); got != "1" {
		t.Errorf("a refused append wrote something: %s", got)
	}
	// The right expectation goes through; the same again is stale.
	appendAll(t, b, start(1))
	if _, err := b.Append(ctx, []queue.Proposal{start(1)}); !errors.Is(err, queue.ErrStale) {
		t.Errorf("second start with the old expectation = %v; want stale", err)
	}
	// Within one call only the first proposal for a task is checked.
	tr := queue.Proposal{Event: &queue.Event{Time: time.Now(), Type: queue.EventTrace, Task: "a", Attempt: 1, Trace: &queue.Trace{Status: execx.StatusSucceeded}}, Expect: 2}
	done := queue.Proposal{Event: &queue.Event{Time: time.Now(), Type: queue.EventSucceeded, Task: "a", Attempt: 1}, Expect: 999}
	appendAll(t, b, tr, done)
	// A second backend instance (another process, as far as the log
	// knows) sees the same conditions after catching up.
	b2 := open(t, b.Dir(), Options{})
	late := queue.Proposal{Event: &queue.Event{Time: time.Now(), Type: queue.EventCancelRequested, Task: "a", Attempt: 1}, Expect: 2}
	if _, err := b2.Append(ctx, []queue.Proposal{late}); !errors.Is(err, queue.ErrStale) {
		t.Errorf("stale expectation through a second instance = %v", err)
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	var syncs atomic.Int64
	b := open(t, t.TempDir(), Options{hook: func(step string) error {
		if step == "sync" {
			syncs.Add(1)
			time.Sleep(time.Millisecond) // a slow disk makes batching visible
		}
		return nil
	}})
	const writers, each = 64, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []uint64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				evs, err := b.Append(ctx, []queue.Proposal{enq(fmt.Sprintf("w%d-%d", w, i))})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, evs[0].Seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, s := range all {
		if s != uint64(i+1) {
			t.Fatalf("sequence %d at position %d: not contiguous", s, i)
		}
	}
	if n := syncs.Load(); n >= writers*each/4 {
		t.Errorf("%d syncs for %d appends: group commit is not batching", n, writers*each)
	}
	t.Logf("%d appends, %d syncs", writers*each, syncs.Load())
	if got := len(readAll(t, b, 0)); got != writers*each {
		t.Errorf("read %d events; want %d", got, writers*each)
	}
}

func TestInstancesInterleave(t *testing.T) {
	dir := t.TempDir()
	var bs []*Backend
	for range 3 {
		bs = append(bs, open(t, dir, Options{}))
	}
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				p := enq(fmt.Sprintf("i%d-%d", i, j))
				p.Any = false // conditional: exercises each instance's index catch-up
				if _, err := b.Append(ctx, []queue.Proposal{p}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs := readAll(t, open(t, dir, Options{ReadOnly: true}), 0)
	if len(evs) != 150 {
		t.Fatalf("read %d events; want 150", len(evs))
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// logWith writes n enqueued events through a backend and returns the log's
// bytes.
func logWith(t *testing.T, dir string, n int) []byte {
	t.Helper()
	b := open(t, dir, Options{})
	for i := range n {
		appendAll(t, b, enq(fmt.Sprintf("t%d", i)))
	}
	b.Close()
	data, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name string
		tail func(good []byte) []byte // what follows the three good records
	}{
		{"fragment", func(g []byte) []byte { return []byte(`{"seq":4,"time":"2026-11-30T0`) }},
		{"zeros", func(g []byte) []byte { return make([]byte, 300) }},
		{"record without its newline", func(g []byte) []byte {
			// A crash after the record's bytes, before its newline: never
			// acknowledged (the sync comes after the whole write).
			line := bytes.SplitAfter(g, []byte("\n"))[2]
			return bytes.TrimSuffix(bytes.Replace(line, []byte(`"seq":3`), []byte(`"seq":4`), 1), []byte("\n"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			good := logWith(t, dir, 3)
			torn := append(append([]byte{}, good...), c.tail(good)...)
			path := filepath.Join(dir, LogName)
			os.WriteFile(path, torn, 0o600)

			// Inspect: reads the good records, reports the tail, writes nothing.
			ro := open(t, dir, Options{ReadOnly: true})
			if got := seqs(readAll(t, ro, 0)); got != "1,2,3" {
				t.Errorf("read-only Read = %s", got)
			}
			rep, err := ro.Check(ctx)
			if err != nil || rep.TornTail == nil || rep.TornTail.Offset != int64(len(good)) || rep.TornTail.Bytes != int64(len(torn)-len(good)) {
				t.Fatalf("Check = %+v, %v; want torn tail at %d", rep, err, len(good))
			}
			if data, _ := os.ReadFile(path); !bytes.Equal(data, torn) {
				t.Fatal("Inspect changed the log")
			}

			// Open: cuts the tail and records that it did.
			w := open(t, dir, Options{})
			evs := readAll(t, w, 0)
			if len(evs) != 4 || evs[3].Type != queue.EventTruncated || evs[3].Offset != int64(len(good)) || evs[3].Bytes != int64(len(torn)-len(good)) {
				t.Fatalf("after Open: %d events, last %+v; want a truncated event for the tail", len(evs), evs[len(evs)-1])
			}
			appendAll(t, w, enq("after"))
			rep, err = w.Check(ctx)
			if err != nil || rep.TornTail != nil || rep.LastSeq != 5 {
				t.Errorf("Check after repair = %+v, %v", rep, err)
			}
		})
	}
}

func TestCorruptionBeforeTail(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 3)
	lines := bytes.SplitAfter(good, []byte("\n"))
	off := len(lines[0])
	bad := bytes.Replace(good, []byte(`"t1"`), []byte(`"T1"`), 1)
	path := filepath.Join(dir, LogName)
	os.WriteFile(path, bad, 0o600)

	check := func(what string, err error) {
		t.Helper()
		var ce *queue.CorruptError
		if !errors.As(err, &ce) || ce.Offset != int64(off) || exitcode.Of(err) != exitcode.Internal {
			t.Errorf("%s = %v; want corruption at byte %d, exit 125", what, err, off)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("byte %d", off)) {
			t.Errorf("%s: message %q does not name the offset", what, err)
		}
	}
	ro := open(t, dir, Options{ReadOnly: true})
	check("Read", ro.Read(ctx, 0, func(*queue.Event) error { return nil }))
	_, err := ro.Check(ctx)
	check("Check", err)
	// A writer checks the record before a torn tail: damage there stops
	// Open before it cuts or appends anything.
	damagedTail := bytes.Replace(good, []byte(`"t2"`), []byte(`"T2"`), 1)
	damagedTail = append(damagedTail, "garbage"...)
	os.WriteFile(path, damagedTail, 0o600)
	_, err = Open(dir, Options{})
	var ce *queue.CorruptError
	if !errors.As(err, &ce) || ce.Offset != int64(len(lines[0])+len(lines[1])) {
		t.Fatalf("Open with a damaged record before a torn tail = %v", err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, damagedTail) {
		t.Error("a failed Open changed the log")
	}
}

func TestSequenceGap(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 3)
	lines := bytes.SplitAfter(good, []byte("\n"))
	gap := append(append([]byte{}, lines[0]...), lines[2]...)
	os.WriteFile(filepath.Join(dir, LogName), gap, 0o600)
	err := open(t, dir, Options{ReadOnly: true}).Read(ctx, 0, func(*queue.Event) error { return nil })
	if !queue.IsCorrupt(err) || !strings.Contains(err.Error(), "sequence 3 follows 1") {
		t.Errorf("Read of a log with a gap = %v", err)
	}
}

func TestAppendFailureLeavesLogIntact(t *testing.T) {
	dir := t.TempDir()
	fail := errors.New("injected")
	var armed atomic.Bool
	b := open(t, dir, Options{hook: func(step string) error {
		if armed.Load() && step == "write" {
			return fail
		}
		return nil
	}})
	appendAll(t, b, enq("a"))
	before, _ := os.ReadFile(filepath.Join(dir, LogName))
	armed.Store(true)
	if _, err := b.Append(ctx, []queue.Proposal{enq("b")}); !errors.Is(err, fail) {
		t.Fatalf("Append = %v", err)
	}
	armed.Store(false)
	after, _ := os.ReadFile(filepath.Join(dir, LogName))
	if !bytes.Equal(before, after) {
		t.Error("a failed append changed the log")
	}
	if evs := appendAll(t, b, enq("c")); evs[0].Seq != 2 {
		t.Errorf("next append got seq %d; want 2", evs[0].Seq)
	}
}

func TestLeases(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir, Options{})
	b := open(t, dir, Options{ReadOnly: true})
	l, err := a.AcquireLease(ctx, "w1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if alive, _ := b.Alive(ctx, "w1"); !alive {
		t.Error("a held lease is not alive")
	}
	if alive, _ := b.Alive(ctx, "w2"); alive {
		t.Error("an unknown worker is alive")
	}
	c := open(t, dir, Options{})
	if _, err := c.AcquireLease(ctx, "w1", time.Second); exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("second lease on w1 = %v; want a conflict", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if alive, _ := b.Alive(ctx, "w1"); alive {
		t.Error("a released lease is alive")
	}
	if _, err := os.Stat(filepath.Join(dir, WorkersDir, "w1.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Error("Release left the lease file")
	}
	if _, err := a.AcquireLease(ctx, "../x", time.Second); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a worker id with a slash = %v; want exit 2", err)
	}
}

func TestWaitSeesOtherInstances(t *testing.T) {
	dir := t.TempDir()
	w := open(t, dir, Options{})
	r := open(t, dir, Options{ReadOnly: true, WatchInterval: 5 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- r.Wait(ctx, 0) }()
	time.Sleep(20 * time.Millisecond)
	appendAll(t, w, enq("a"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after an append by another instance")
	}
	cctx, cancel := context.WithCancelCause(ctx)
	cause := errors.New("stop")
	cancel(cause)
	if err := r.Wait(cctx, 1); !errors.Is(err, cause) {
		t.Errorf("Wait on a cancelled context = %v; want its cause", err)
	}
}
