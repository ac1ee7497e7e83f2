//go:build linux

package execx

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fdPath is the path the kernel has for an open file.
func fdPath(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
}

// growPipe asks for a 1 MiB pipe buffer: fewer wakeups and reads for a
// chatty child. It is an optimization only; failure (the per-user pipe
// quota) changes nothing else.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20)
		})
	}
}
