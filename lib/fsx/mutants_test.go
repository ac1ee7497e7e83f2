package fsx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests that kill mutants `make mutants` found alive in this package; the
// mutants left alive, and why each is equivalent, are listed in
// docs/mutants.md.

// TestWithin: the last check of ResolveBeneath, behind OpenBeneath's own
// (so only a swap between the two reaches it): the root itself and paths
// below it are within, a sibling sharing the root's name as a prefix is not.
func TestWithin(t *testing.T) {
	for _, c := range []struct {
		root, p string
		want    bool
	}{
		{"/w", "/w", true},
		{"/w", "/w/a", true},
		{"/w/", "/w/a/b", true},
		{"/w", "/", false},
		{"/w", "/wx", false},
		{"/w", "/wx/a", false},
		{"/w", "/etc/passwd", false},
	} {
		if got := within(c.root, c.p); got != c.want {
			t.Errorf("within(%q, %q) = %v; want %v", c.root, c.p, got, c.want)
		}
	}
}

// TestIsLockedUnheld: an existing lock file nobody holds is not locked, and
// asking leaves it unheld (a reader's question takes nothing).
func TestIsLockedUnheld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	must(t, os.WriteFile(p, nil, FileMode))
	if locked, err := IsLocked(p); err != nil || locked {
		t.Fatalf("IsLocked(unheld) = %v, %v; want false, nil", locked, err)
	}
	l, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after IsLocked = %v; IsLocked must not keep the lock", err)
	}
	must(t, l.Unlock())
}

// TestTryLockNeverWaits: a try on a held lock says held (ErrLocked), never
// that it timed out waiting: it did not wait.
func TestTryLockNeverWaits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := LockFile(p)
	must(t, err)
	defer l.Unlock()
	_, err = TryLock(p)
	var te *LockTimeoutError
	if !errors.Is(err, ErrLocked) || errors.As(err, &te) {
		t.Errorf("TryLock(held) = %v (%T); want ErrLocked, not a timeout", err, err)
	}
}

// TestLineOffsets: every line's offset is its byte offset in the file,
// whether the reader starts at 0 or in the middle.
func TestLineOffsets(t *testing.T) {
	data := strings.NewReader("a\nbb\nccc\n")
	for _, c := range []struct {
		start int64
		want  []int64
	}{{0, []int64{0, 2, 5}}, {2, []int64{2, 5}}, {5, []int64{5}}} {
		r := NewLineReader(data, c.start, -1, 16)
		var got []int64
		for {
			_, off, complete, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil || !complete {
				t.Fatalf("Next from %d: %v, complete %v", c.start, err, complete)
			}
			got = append(got, off)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("offsets from %d = %v; want %v", c.start, got, c.want)
		}
	}
}

// TestLogCloseClosesOnce: Close closes the data file (its descriptor is
// gone after), and a second Close, or Close of a nil Log, is a no-op.
func TestLogCloseClosesOnce(t *testing.T) {
	l, err := OpenLog(filepath.Join(t.TempDir(), "events.log"), LogOptions{Create: true})
	must(t, err)
	f := l.File()
	must(t, l.Close())
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("after Close, Stat of the data file = %v; want it closed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	var nilLog *Log
	if err := nilLog.Close(); err != nil {
		t.Errorf("nil Close = %v; want nil", err)
	}
}

// TestLockerInfoInPlace: once an info line is written whole, the next of
// the same length is written over it without a truncate (the holder line
// is rewritten on every commit), and Close twice is a no-op.
func TestLockerInfoInPlace(t *testing.T) {
	l := NewLocker(filepath.Join(t.TempDir(), "x.lock"), 0)
	must(t, l.Lock())
	l.SetInfo([]byte("pid 1\n"))
	if l.infoLen != len("pid 1\n") {
		t.Errorf("after a whole write infoLen = %d; want %d", l.infoLen, len("pid 1\n"))
	}
	must(t, l.Close())
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
}

// TestLineReaderLongInput: many short lines past the first buffer's 64 KiB
// are all read (the buffer is compacted, not taken for one long line); a
// line exactly max bytes long is a line, not an overlong fragment; and a
// limit of 0 reads nothing.
func TestLineReaderLongInput(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "line %05d\n", i)
	}
	r := NewLineReader(strings.NewReader(b.String()), 0, -1, 64)
	n := 0
	for {
		_, _, complete, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil || !complete || r.Overlong() {
			t.Fatalf("line %d: err %v, complete %v, overlong %v", n, err, complete, r.Overlong())
		}
		n++
	}
	if n != 20000 {
		t.Errorf("read %d lines; want 20000", n)
	}

	max := 64 << 10
	exact := strings.Repeat("x", max) + "\n"
	line, _, complete, err := NewLineReader(strings.NewReader(exact), 0, -1, max).Next()
	if err != nil || !complete || len(line) != max {
		t.Errorf("a line of exactly max bytes: len %d, complete %v, err %v; want the whole line", len(line), complete, err)
	}

	if _, _, _, err := NewLineReader(strings.NewReader("a\n"), 0, 0, 16).Next(); err != io.EOF {
		t.Errorf("Next with limit 0 = %v; want io.EOF", err)
	}
}

// TestHeldInfo: what a holder wrote is read back while it holds the lock;
// an unheld or missing lock file is not held, and nothing is created.
func TestHeldInfo(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	if held, _, err := HeldInfo(p, 64); err != nil || held {
		t.Fatalf("HeldInfo(missing) = %v, %v; want false, nil", held, err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("HeldInfo created %s", p)
	}
	l, err := LockFile(p)
	must(t, err)
	l.SetInfo([]byte("worker w1 pid 42\n"))
	held, info, err := HeldInfo(p, 64)
	if err != nil || !held || string(info) != "worker w1 pid 42\n" {
		t.Errorf("HeldInfo(held) = %v, %q, %v; want true and the holder's line", held, info, err)
	}
	must(t, l.Unlock())
	if held, _, err := HeldInfo(p, 64); err != nil || held {
		t.Errorf("HeldInfo(released) = %v, %v; want false, nil", held, err)
	}
	if _, err := LockWait(p, 10*time.Millisecond); err != nil {
		t.Errorf("LockWait(free) = %v", err)
	}
}
