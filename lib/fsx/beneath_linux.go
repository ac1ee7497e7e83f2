//go:build linux

package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	openat2Once sync.Once
	openat2OK   bool
)

// hasOpenat2 probes the syscall once: kernels before 5.6 answer ENOSYS, and
// some seccomp profiles answer EPERM.
func hasOpenat2() bool {
	openat2Once.Do(func() {
		fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY})
		if err == nil {
			unix.Close(fd)
			openat2OK = true
		}
	})
	return openat2OK
}

func openBeneath(root, rel string, flags int) (*os.File, error) {
	if !hasOpenat2() {
		return openBeneathPortable(root, rel, flags)
	}
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dirfd)
	how := &unix.OpenHow{
		Flags:   uint64(flags) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for {
		fd, err = unix.Openat2(dirfd, rel, how)
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.EXDEV) {
			return nil, &PathError{Path: rel, Reason: "resolves outside the workspace"}
		}
		if errors.Is(err, unix.ELOOP) {
			return nil, &PathError{Path: rel, Reason: "symbolic link loop or magic link"}
		}
		return nil, escapeOr(rel, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}
