package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWriteFileKeepsCause(t *testing.T) {
	if os.Geteuid() != 0 {
		dir := t.TempDir()
		must(t, os.Chmod(dir, 0o500))
		defer os.Chmod(dir, 0o700)
		err := WriteFile(filepath.Join(dir, "x"), []byte("x"), FileMode)
		if !errors.Is(err, os.ErrPermission) {
			t.Errorf("WriteFile into a read-only dir = %v; want a wrapped permission error", err)
		}
		return
	}
	// As root, directory permissions do not stop us: fill a tiny tmpfs.
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, 0)
	p := filepath.Join(dir, "state.json")
	must(t, WriteFile(p, []byte("old"), FileMode))
	err := WriteFile(p, make([]byte, 1<<20), FileMode)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteFile on a full disk = %v; want a wrapped ENOSPC", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("after a failed write the file holds %q; want the old bytes", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed write left %d entries; want only the target", len(entries))
	}
}
