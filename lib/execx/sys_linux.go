//go:build linux

package execx

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// fdPath is the path the kernel has for an open file.
func fdPath(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
}

// growPipe asks for a 256 KiB pipe buffer (default 64 KiB): fewer wakeups
// and reads for a chatty child, measured fastest for 1 GiB of output (1 MiB
// was slower: the buffer no longer stays in cache). It is an optimization
// only; failure (the per-user pipe quota, which this keeps a small bite of)
// changes nothing else.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 256<<10)
		})
	}
}

var dumpableOnce sync.Once

// markNonDumpable makes the runner non-dumpable, once: a task running as
// the same user can then neither ptrace it nor read its memory, environ
// or descriptors through /proc. (Only a process with CAP_SYS_PTRACE could,
// and the task has none under landlock and strict.)
func markNonDumpable() {
	dumpableOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

// childPipe is a pipe between the runner and a child: the end the
// runner keeps (ours: 0 the read end, 1 the write end) in non-blocking
// mode for the runtime's poller if poll is set, the other blocking from
// the start, as a child expects it. Both are close-on-exec (a child gets
// its end through ProcAttr.Files or SCM_RIGHTS). os.Pipe makes both ends
// pollable and Fd() on the child's end then makes it blocking again: per
// pipe, four fcntl, one poller registration and its removal more than
// this, on every run.
func childPipe(ours int, poll bool) (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	if poll {
		if err := unix.SetNonblock(p[ours], true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return nil, nil, err
		}
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
