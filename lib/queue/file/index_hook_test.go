package file

import (
	"context"
	"os"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/queuetest"
)

// TestReadFrom: reading from a unit's end delivers what Read delivers
// after that unit, a batch whole, and stops before a torn tail.
func TestReadFrom(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	queuetest.MustAppend(t, b, queuetest.Enq("a"))
	queuetest.MustAppend(t, b, queuetest.Enq("b"), queuetest.Enq("c"))
	queuetest.MustAppend(t, b, queuetest.Enq("d"))
	f, err := os.Open(b.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The offset just past record 1.
	var off int64
	var seqs []uint64
	end, last, err := ReadFrom(context.Background(), f, 0, -1, 0, func(ev *queue.Event) error { return nil })
	if err != nil || last != 4 {
		t.Fatalf("from the start: last %d, err %v", last, err)
	}
	fi, _ := f.Stat()
	if end != fi.Size() {
		t.Fatalf("end %d, size %d", end, fi.Size())
	}
	data, _ := os.ReadFile(b.logPath)
	for i, c := range data {
		if c == '\n' {
			off = int64(i + 1)
			break
		}
	}
	// A torn tail after the last record is not delivered.
	w, _ := os.OpenFile(b.logPath, os.O_WRONLY|os.O_APPEND, 0)
	w.WriteString(`{"seq":5,`)
	w.Close()
	end2, last, err := ReadFrom(context.Background(), f, off, -1, 1, func(ev *queue.Event) error {
		seqs = append(seqs, ev.Seq)
		return nil
	})
	if err != nil || last != 4 || end2 != end || len(seqs) != 3 || seqs[0] != 2 || seqs[2] != 4 {
		t.Fatalf("after 1: seqs %v last %d end %d err %v", seqs, last, end2, err)
	}
	// The sequence must go on from prev: a wrong prev is corruption.
	if _, _, err := ReadFrom(context.Background(), f, off, -1, 7, func(*queue.Event) error { return nil }); !queue.IsCorrupt(err) {
		t.Fatalf("wrong prev: %v", err)
	}
}
