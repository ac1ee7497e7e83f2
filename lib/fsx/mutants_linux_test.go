package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFlockWaitReportsOtherErrors: a flock failure other than "held" (here
// EBADF, an O_PATH descriptor) is that error, not a report that someone
// holds the lock.
func TestFlockWaitReportsOtherErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	must(t, os.WriteFile(p, nil, FileMode))
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	must(t, err)
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	err = flockWait(f, p, 0)
	if !errors.Is(err, unix.EBADF) || errors.Is(err, ErrLocked) {
		t.Errorf("flockWait(O_PATH fd) = %v; want EBADF, not ErrLocked", err)
	}
}
