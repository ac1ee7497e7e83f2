package fsx

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// OpenDir opens path, which must be absolute and canonical (no symlink in
// any component: filepath.EvalSymlinks's result), as a directory
// descriptor that names the directory itself (O_PATH): it grants no read
// of its own, only a place to resolve from. A symlink found anywhere in
// path is refused (openat2 RESOLVE_NO_SYMLINKS; before Linux 5.6,
// O_NOFOLLOW on the last component): the path changed since it was made
// canonical, and the open must not follow the change. Everything done
// later to the directory goes through this descriptor, never the path
// again.
func OpenDir(path string) (*os.File, error) {
	flags := uint64(unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC)
	fd, err := openat2(unix.AT_FDCWD, path, flags, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if errors.Is(err, unix.ENOSYS) {
		fd, err = retryEINTR(func() (int, error) { return unix.Open(path, int(flags), 0) })
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, &PathError{Path: path, Reason: "a symbolic link appeared in the path since it was resolved"}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenBeneathDir is OpenBeneath with its root already open (dir, from
// OpenDir or an open of a directory): rel is resolved from that very
// directory, whatever its path names by now. Where the kernel has openat2
// it is one call (RESOLVE_BENEATH: no "..", absolute symlink or magic
// link may leave dir); elsewhere os.Root does the component walk from the
// descriptor's /proc/self/fd link.
func OpenBeneathDir(dir *os.File, rel string, flags int) (*os.File, error) {
	if err := CheckRel(rel); err != nil {
		return nil, err
	}
	if flags&os.O_CREATE != 0 {
		return nil, &PathError{Path: rel, Reason: "creating files is not allowed"}
	}
	how := uint64(flags | unix.O_CLOEXEC)
	for range 8 { // EAGAIN: a rename elsewhere raced the lookup; try again
		fd, err := openat2(int(dir.Fd()), rel, how, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_MAGICLINKS)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), dir.Name()+"/"+rel), nil
		case errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.EXDEV):
			return nil, &PathError{Path: rel, Reason: "resolves outside the workspace"}
		case errors.Is(err, unix.ELOOP):
			return nil, &PathError{Path: rel, Reason: "symbolic link loop"}
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("%s: %w", rel, os.ErrNotExist)
		case !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		break
	}
	return OpenBeneath("/proc/self/fd/"+strconv.Itoa(int(dir.Fd())), rel, flags)
}

func openat2(dirfd int, path string, flags, resolve uint64) (int, error) {
	return retryEINTR(func() (int, error) {
		return unix.Openat2(dirfd, path, &unix.OpenHow{Flags: flags, Resolve: resolve})
	})
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
