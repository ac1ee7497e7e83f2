package obs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestLookup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{Now: fixedClock()}, openJSONL(t, path, JSONLOptions{}))
	envs := emitN(t, e, "s", 3)
	// A record that names envs[1]'s id in its attrs (a causation chain does
	// this) must not be taken for it.
	d := e.Emit(context.Background(), Draft{Subject: "other", Type: "ref", Attrs: map[string]any{"id": envs[1].ID()}})
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	e.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	write := func(t *testing.T, ls []string) string {
		p := filepath.Join(t.TempDir(), "e.jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("found", func(t *testing.T) {
		for i, env := range envs {
			f, err := Lookup(path, env.ID())
			if err != nil {
				t.Fatal(err)
			}
			if f.Line != i+1 || f.Envelope.Subject() != "s" || f.Envelope.Seq() != uint64(i+1) || f.Envelope.ID() != env.ID() {
				t.Errorf("event %d: line %d subject %q seq %d", i, f.Line, f.Envelope.Subject(), f.Envelope.Seq())
			}
		}
		f, err := Lookup(path, d.Envelope.ID())
		if err != nil || f.Line != 4 || f.Offset != int64(len(strings.Join(lines[:3], ""))) {
			t.Errorf("the referring record: line %d offset %d, %v", f.Line, f.Offset, err)
		}
	})
	t.Run("mentioned only in attrs", func(t *testing.T) {
		p := write(t, []string{lines[0], lines[3]})
		_, err := Lookup(p, envs[1].ID())
		if !errors.Is(err, ErrNoEvent) || exitcode.Of(err) != exitcode.NotFound {
			t.Errorf("err = %v (exit %d); want ErrNoEvent, exit 4", err, exitcode.Of(err))
		}
	})
	t.Run("tampered", func(t *testing.T) {
		ls := append([]string(nil), lines...)
		ls[1] = strings.Replace(ls[1], `"i":1`, `"i":7`, 1)
		_, err := Lookup(write(t, ls), envs[1].ID())
		if !errors.Is(err, ErrCorrupt) || exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("err = %v (exit %d); want ErrCorrupt naming line 2, exit 125", err, exitcode.Of(err))
		}
		// The other records of the same file still verify.
		if _, err := Lookup(write(t, ls), envs[2].ID()); err != nil {
			t.Error(err)
		}
	})
	t.Run("torn last record", func(t *testing.T) {
		ls := append([]string(nil), lines[:2]...)
		ls = append(ls, strings.TrimSuffix(lines[2], "\n"))
		_, err := Lookup(write(t, ls), envs[2].ID())
		if !errors.Is(err, ErrNoEvent) {
			t.Errorf("err = %v; want ErrNoEvent: a record without its newline is not read", err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			path, id string
			code     int
		}{
			{path, "sha256:ABC", exitcode.Usage},
			{path, "x", exitcode.Usage},
			{filepath.Join(t.TempDir(), "none.jsonl"), envs[0].ID(), exitcode.NotFound},
			{t.TempDir(), envs[0].ID(), exitcode.Refused},
			{path, "sha256:" + strings.Repeat("0", 64), exitcode.NotFound},
		} {
			if _, err := Lookup(tt.path, tt.id); exitcode.Of(err) != tt.code {
				t.Errorf("Lookup(%s, %s) = %v (exit %d); want exit %d", tt.path, tt.id, err, exitcode.Of(err), tt.code)
			}
		}
	})
	t.Run("fifo does not hang", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Lookup(p, envs[0].ID()); exitcode.Of(err) != exitcode.Refused {
			t.Errorf("fifo: %v (exit %d); want exit 126", err, exitcode.Of(err))
		}
	})
}
