package systest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs is a tmpfs of a few hundred KiB mounted over a test's temporary
// directory: a disk of its own that the test can fill (Fill, Free) or make
// read-only (ReadOnly, ReadWrite) under a tool's state, with real ENOSPC
// and EROFS from the kernel.
type Tmpfs struct {
	Dir  string
	t    testing.TB
	opts string
}

const ballast = "ballast"

// MountTmpfs mounts a tmpfs of size bytes over a new temporary directory and
// unmounts it when the test ends. It skips the test when not running as
// root or when the mount is refused (a container without CAP_SYS_ADMIN).
func MountTmpfs(t testing.TB, size int64) *Tmpfs {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	opts := fmt.Sprintf("size=%d,mode=0700", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("mount tmpfs on %s: %v", dir, err)
	}
	// Registered after TempDir's own cleanup, so it runs first: the
	// directory is unmounted before it is removed.
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return &Tmpfs{Dir: dir, t: t, opts: opts}
}

// Path joins elem to the mount point.
func (m *Tmpfs) Path(elem ...string) string {
	return filepath.Join(append([]string{m.Dir}, elem...)...)
}

// Fill takes every free page of the tmpfs with a ballast file (writing
// until the kernel says ENOSPC) and returns how many bytes that took. A
// write that needs a new page then fails; one that fits in the unused end
// of a file's last page can still succeed, as on a real full disk.
func (m *Tmpfs) Fill() int64 {
	m.t.Helper()
	f, err := os.OpenFile(m.Path(ballast), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		m.t.Fatalf("fill %s: %v", m.Dir, err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(chunk)
		n += int64(w)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			m.t.Fatalf("fill %s: %v", m.Dir, err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Dir, &st); err != nil {
		m.t.Fatalf("statfs %s: %v", m.Dir, err)
	}
	if st.Bavail != 0 {
		m.t.Fatalf("fill %s: %d blocks still free", m.Dir, st.Bavail)
	}
	return n
}

// Free removes the ballast: space returns.
func (m *Tmpfs) Free() {
	m.t.Helper()
	if err := os.Remove(m.Path(ballast)); err != nil {
		m.t.Fatalf("free %s: %v", m.Dir, err)
	}
}

// ReadOnly remounts the tmpfs read-only: every write, create, rename and
// truncate under it fails with EROFS, whatever the permissions (root's
// included). It fails the test when a file is still open for writing.
func (m *Tmpfs) ReadOnly() { m.remount(unix.MS_RDONLY) }

// ReadWrite makes the tmpfs writable again.
func (m *Tmpfs) ReadWrite() { m.remount(0) }

func (m *Tmpfs) remount(flags uintptr) {
	m.t.Helper()
	if err := unix.Mount("tmpfs", m.Dir, "tmpfs", unix.MS_REMOUNT|flags, m.opts); err != nil {
		m.t.Fatalf("remount %s: %v", m.Dir, err)
	}
}

// A Fault is a way a filesystem refuses writes, with the words of the
// error the kernel then gives (as strerror spells them), how to cause it
// and how to end it.
type Fault struct {
	Name  string
	Cause string
	Break func(*Tmpfs)
	Mend  func(*Tmpfs)
}

// Faults are the two ways a durable writer meets a filesystem that will
// not take its bytes: full (ENOSPC) and read-only (EROFS).
var Faults = []Fault{
	{"full", "no space left on device", func(m *Tmpfs) { m.Fill() }, (*Tmpfs).Free},
	{"read-only", "read-only file system", (*Tmpfs).ReadOnly, (*Tmpfs).ReadWrite},
}
