package worker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyTreeSwapRace: while copy-mode workspaces are copied from the
// source, an attacker outside the worker (another goroutine, as a running
// task would) flips a directory of the source between a real directory and
// a symlink to a directory outside it. The copy may fail, or copy the
// symlink as a symlink, but no copy may ever hold a byte of the outside
// files, and nothing is written outside.
func TestCopyTreeSwapRace(t *testing.T) {
	base := t.TempDir()
	src, outside, dsts := filepath.Join(base, "src"), filepath.Join(base, "outside"), filepath.Join(base, "dst")
	for _, d := range []string{filepath.Join(src, "d.real", "sub"), filepath.Join(outside, "sub"), dsts} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct{ path, data string }{
		{filepath.Join(src, "d.real", "f"), "inside"},
		{filepath.Join(src, "d.real", "sub", "g"), "inside"},
		{filepath.Join(outside, "f"), "SECRET"},
		{filepath.Join(outside, "sub", "g"), "SECRET"},
	} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// d is a real directory of the source; d.evil a symlink out. The
	// attacker exchanges the two names atomically (renameat2
	// RENAME_EXCHANGE), so d is a directory one moment and a way out the
	// next, and the walk sees either at any step.
	if err := os.Rename(filepath.Join(src, "d.real"), filepath.Join(src, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(src, "d.evil")); err != nil {
		t.Fatal(err)
	}
	srcRoot, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	defer srcRoot.Close()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, "d"), unix.AT_FDCWD, filepath.Join(src, "d.evil"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	}()
	n := 300
	if testing.Short() {
		n = 60
	}
	copied, failed := 0, 0
	for i := range n {
		dst := filepath.Join(dsts, fmt.Sprint(i))
		if err := os.Mkdir(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		dr, err := os.OpenRoot(dst)
		if err != nil {
			t.Fatal(err)
		}
		_, cerr := copyTree(context.Background(), srcRoot, dr)
		dr.Close()
		if cerr != nil {
			failed++
		} else {
			copied++
		}
		// Whatever happened, the copy holds no outside byte: walk it
		// without following symlinks and read every regular file.
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "SECRET") {
				t.Fatalf("copy %d holds %s with outside content (copy error: %v)", i, p, cerr)
			}
			return nil
		})
	}
	close(done)
	<-stopped
	filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != outside && !strings.HasSuffix(p, "/f") && !strings.HasSuffix(p, "/sub") && !strings.HasSuffix(p, "/g") {
			t.Errorf("the copy wrote %s outside the workspace", p)
		}
		return nil
	})
	if copied == 0 {
		t.Errorf("no copy succeeded in %d tries", n)
	}
	t.Logf("%d copies made, %d failed on the race; none held an outside byte", copied, failed)
}
