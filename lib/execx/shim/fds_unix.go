//go:build linux || darwin

package shim

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// MarkCloexecDir marks every descriptor >= lo listed in dir (/proc/self/fd,
// /dev/fd) close-on-exec, one fcntl each; without the directory it falls
// back to trying every descriptor below the open-files limit.
func MarkCloexecDir(dir string, lo int) {
	d, err := os.Open(dir)
	if err != nil {
		MarkCloexecUpTo(lo)
		return
	}
	names, err := d.Readdirnames(-1)
	d.Close() // its own descriptor is listed too; marking it after the close is harmless
	if err != nil {
		MarkCloexecUpTo(lo)
		return
	}
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd >= lo {
			unix.CloseOnExec(fd)
		}
	}
}

// maxBruteFD bounds the last-resort loop: a process allowed a million
// descriptors would otherwise pay a million fcntl calls per start.
const maxBruteFD = 1 << 16

// MarkCloexecUpTo marks every possible descriptor from lo to the soft
// open-files limit (at most maxBruteFD) close-on-exec: the last resort
// where no directory lists the open ones (Linux older than 5.11 without
// /proc). A descriptor numbered above the limit (opened before the limit
// was lowered) is missed.
func MarkCloexecUpTo(lo int) {
	hi := uint64(maxBruteFD)
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < hi {
		hi = rl.Cur
	}
	for fd := lo; uint64(fd) < hi; fd++ {
		unix.CloseOnExec(fd)
	}
}
