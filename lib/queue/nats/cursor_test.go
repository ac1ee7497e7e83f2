package natsq

import (
	"fmt"
	"slices"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// readSeqs reads every event after `after` and returns their sequences.
func readSeqs(t *testing.T, b *Backend, after uint64) []uint64 {
	t.Helper()
	var got []uint64
	if err := b.Read(bg, after, func(ev *queue.Event) error {
		got = append(got, ev.Seq)
		return nil
	}); err != nil {
		t.Fatalf("Read(after %d): %v", after, err)
	}
	return got
}

func appendTasks(t *testing.T, b *Backend, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := b.Append(bg, enqueue(fmt.Sprintf("t%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// A reader whose position moved past its cursor (the queue applied its own
// appends without reading them) keeps the cursor: it skips what it has and
// delivers exactly what follows, without a new consumer.
func TestReadSkipsAheadOnItsCursor(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "skip", Options{})
	appendTasks(t, b, 0, 3)
	if got := readSeqs(t, b, 0); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("first read = %v", got)
	}
	c := b.rc
	appendTasks(t, b, 3, 8) // 4..8
	if got := readSeqs(t, b, 6); !slices.Equal(got, []uint64{7, 8}) {
		t.Fatalf("read after 6 = %v; want [7 8]", got)
	}
	if b.rc != c {
		t.Errorf("the cursor was made again for a reader ahead of it")
	}
	if got := readSeqs(t, b, 8); len(got) != 0 {
		t.Fatalf("read at the end = %v; want nothing", got)
	}
	// Behind the cursor, or too far ahead of it: a new one.
	if got := readSeqs(t, b, 1); !slices.Equal(got, []uint64{2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("read after 1 = %v", got)
	}
	if b.rc == c {
		t.Errorf("a cursor ahead of the reader was kept")
	}
}

// A cursor left behind a compaction finds the events it would skip gone: it
// is made again at the reader's position, which it reaches at once (not
// after a pull's expiry) and without losing what follows.
func TestReadSkipAcrossCompaction(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	w := open(t, srv.URL(), "skipc", Options{})
	r := open(t, srv.URL(), "skipc", Options{ReadOnly: true})
	appendTasks(t, w, 0, 1) // 1
	if got := readSeqs(t, r, 0); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("first read = %v", got)
	}
	appendTasks(t, w, 1, 3) // 2, 3
	q := queue.New(w)
	for _, id := range []string{"t0", "t1", "t2"} { // 4, 5, 6
		if _, err := q.Cancel(bg, id); err != nil {
			t.Fatal(err)
		}
	}
	// Snapshot through 6, compacted event 7; the enqueues 1..3 are purged.
	if _, err := q.Compact(bg); err != nil {
		t.Fatal(err)
	}
	appendTasks(t, w, 3, 4) // 8
	c := r.rc
	if got := readSeqs(t, r, 5); !slices.Equal(got, []uint64{6, 7, 8}) {
		t.Fatalf("read after 5 across the compaction = %v; want [6 7 8]", got)
	}
	if r.rc == c {
		t.Errorf("the cursor that met the purged events was kept")
	}
}
