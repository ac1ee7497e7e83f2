package file

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// wantCorrupt checks that err is corruption (exit 125) at byte off.
func wantCorrupt(t *testing.T, what string, err error, off int64) {
	t.Helper()
	var ce *queue.CorruptError
	if !errors.As(err, &ce) || exitcode.Of(err) != exitcode.Internal {
		t.Fatalf("%s = %v; want corruption (exit 125)", what, err)
	}
	if ce.Offset != off {
		t.Fatalf("%s: corruption at byte %d; want %d (%v)", what, ce.Offset, off, err)
	}
}

// TestBitFlipInLastRecord: every single-bit flip of the last record, its
// newline included, is corruption at that record's offset for readers,
// fsck and writers alike; no writer cuts it or appends after it, and the
// file is left as it was. (A torn tail is only an incomplete final line
// that a crash mid-append can leave.)
func TestBitFlipInLastRecord(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 3)
	lines := bytes.SplitAfter(good, []byte("\n"))
	start := int64(len(lines[0]) + len(lines[1]))
	path := filepath.Join(dir, LogName)
	flips := 0
	for i := start; i < int64(len(good)); i++ {
		for bit := range 8 {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			ro, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			err = ro.Read(ctx, 0, func(*queue.Event) error { return nil })
			wantCorrupt(t, "Read", err, start)
			_, err = ro.Check(ctx)
			wantCorrupt(t, "Check", err, start)
			ro.Close()
			w, err := Open(dir, Options{})
			if err == nil {
				w.Close()
			}
			wantCorrupt(t, "Open for writing", err, start)
			if data, _ := os.ReadFile(path); !bytes.Equal(data, bad) {
				t.Fatalf("flip of bit %d at byte %d: the log was changed", bit, i)
			}
			flips++
		}
	}
	t.Logf("%d single-bit flips of the last record, all refused", flips)
}

// TestFlipInPreviousNewline: a flip in the newline between the last two
// records glues them into one bad line: corruption at the first one's
// offset, not a torn tail that would cut both.
func TestFlipInPreviousNewline(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 3)
	lines := bytes.SplitAfter(good, []byte("\n"))
	start := int64(len(lines[0]))
	nl := start + int64(len(lines[1])) - 1
	for bit := range 8 {
		bad := bytes.Clone(good)
		bad[nl] ^= 1 << bit
		os.WriteFile(filepath.Join(dir, LogName), bad, 0o600)
		_, err := Open(dir, Options{})
		wantCorrupt(t, "Open for writing", err, start)
	}
}

// TestCorruptMidLogRefusesAppends: a writer refuses to append to a log
// damaged anywhere, even an append that needs nothing of it (an enqueue of
// a generated id).
func TestCorruptMidLogRefusesAppends(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 5)
	lines := bytes.SplitAfter(good, []byte("\n"))
	off := int64(len(lines[0]))
	bad := bytes.Replace(good, []byte(`"t1"`), []byte(`"T1"`), 1)
	path := filepath.Join(dir, LogName)
	os.WriteFile(path, bad, 0o600)
	_, err := Open(dir, Options{})
	wantCorrupt(t, "Open for writing", err, off)

	// A writer that opened the log before it was replaced by a damaged
	// one verifies the new file before its next append.
	os.WriteFile(path, good, 0o600)
	b := open(t, dir, Options{})
	os.WriteFile(path+".new", bad, 0o600)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	p := enq("")
	p.Any, p.Event.Task = true, "generated"
	if _, err := b.Append(ctx, []queue.Proposal{p}); err == nil {
		t.Fatal("an append to a corrupt log was acknowledged")
	} else {
		wantCorrupt(t, "Append", err, off)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, bad) {
		t.Fatal("the corrupt log was changed")
	}
}
