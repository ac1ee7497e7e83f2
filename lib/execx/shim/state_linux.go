//go:build linux

package shim

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// procState is the whole process state of a serving supervisor that a
// task could change from outside or that the next task would inherit:
// its resource limits; every thread's scheduling attributes (policy,
// priority, nice, flags, utilisation clamps), CPU affinity and I/O
// priority; its cgroup; the forking thread's umask, credentials,
// supplementary groups, capabilities, no_new_privs, seccomp mode, signal
// mask and dispositions (as /proc reports them); its working directory,
// securebits, personality, timer slack, dumpable flag and OOM score
// adjustment. A supervisor takes another task only when the state after
// a task compares equal to the state it started with (same).
//
// Most of it no task can reach (the supervisor is non-dumpable: no
// ptrace, and its /proc files are root's), but what a process of the same
// user can change with a pid — sched_setattr, setpriority, ioprio_set,
// sched_setaffinity, prlimit — or root can (cgroup.procs, oom_score_adj)
// is exactly what a later task would otherwise inherit. It is all read,
// not only those: a check is a few system calls and three small reads
// (stateReader).
type procState struct {
	rlimits [unix.RLIMIT_RTTIME + 1]unix.Rlimit
	// thread is the calling thread's (the supervisor forks from
	// whichever thread its goroutine is on); every other thread must
	// match it (threadsDiffer otherwise).
	thread        threadState
	threadsDiffer bool
	status        string // statusFields' lines of the thread stateReader opened them on
	cgroup        string
	oomScoreAdj   string
	cwd           string
	securebits    int
	personality   int
	timerslack    int
	dumpable      int
	err           bool // something could not be read: never equal
}

// threadState is one thread's scheduling as a task could set it.
type threadState struct {
	sched    unix.SchedAttr
	affinity unix.CPUSet
	ioprio   int
}

// statusFields are the lines of /proc/thread-self/status kept in
// procState.status: the rest (memory, context switches, state) changes
// on its own.
var statusFields = [][]byte{
	[]byte("Umask:"), []byte("Uid:"), []byte("Gid:"), []byte("Groups:"),
	[]byte("NoNewPrivs:"), []byte("Seccomp:"), []byte("Seccomp_filters:"),
	[]byte("SigBlk:"), []byte("SigIgn:"), []byte("SigCgt:"),
	[]byte("CapInh:"), []byte("CapPrm:"), []byte("CapEff:"), []byte("CapBnd:"), []byte("CapAmb:"),
	[]byte("NSpid:"),
}

// same reports whether two snapshots are equal and both complete.
func (s *procState) same(o *procState) bool { return !s.err && !o.err && *s == *o }

// stateReader takes procState snapshots for one serving supervisor. The
// /proc files it reads are opened once (thread-self names, for good, the
// thread that opened it: the per-thread lines of status, such as SigBlk,
// are that thread's at every snapshot, compared with its own; a change
// made to one thread's scheduling from outside is what threadsDiffer
// sees), and read again from
// offset 0 at each snapshot: /proc makes a file's text anew at every read
// from its start, so a snapshot is as fresh as with a new open and costs
// no path lookup in /proc, nor an open and close per file.
type stateReader struct {
	status, cgroup, oom, tasks int // descriptors; -1: could not be opened (every snapshot then fails)
	buf                        []byte
	lines                      []byte   // keepStatus's, reused
	names                      []string // otherThreadsDiffer's, reused
}

func newStateReader() *stateReader {
	open := func(name string, flags int) int {
		fd, err := unix.Open(name, flags|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		return fd
	}
	return &stateReader{
		status: open("/proc/thread-self/status", 0),
		cgroup: open("/proc/self/cgroup", 0),
		oom:    open("/proc/self/oom_score_adj", 0),
		tasks:  open("/proc/self/task", unix.O_DIRECTORY),
		buf:    make([]byte, 8192),
	}
}

// reread reads the whole of fd from offset 0 into r.buf, in one read:
// these files are one record each (single_open), made in full at a read
// from offset 0 and cut only by the buffer's size, so a read that does
// not fill the buffer has all of it. One that does is tried again with a
// buffer twice the size (a second read at an offset would make the text
// anew, a second time).
func (r *stateReader) reread(fd int) ([]byte, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	for {
		n, err := unix.Pread(fd, r.buf, 0)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return nil, err
		case n < len(r.buf):
			return r.buf[:n], nil
		default:
			r.buf = make([]byte, 2*len(r.buf))
		}
	}
}

// read snapshots procState.
func (r *stateReader) read() procState {
	var st procState
	fail := func(err error) {
		if err != nil {
			st.err = true
		}
	}
	for res := range st.rlimits {
		fail(unix.Getrlimit(res, &st.rlimits[res]))
	}
	tid := unix.Gettid()
	var err error
	st.thread, err = threadOf(tid)
	fail(err)
	st.threadsDiffer = r.otherThreadsDiffer(tid, &st.thread)
	status, err := r.reread(r.status)
	fail(err)
	st.status = r.keepStatus(status)
	cg, err := r.reread(r.cgroup)
	fail(err)
	st.cgroup = string(cg)
	oom, err := r.reread(r.oom)
	fail(err)
	st.oomScoreAdj = string(oom)
	st.cwd, err = unix.Getwd()
	fail(err)
	st.securebits, err = unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	fail(err)
	st.timerslack, err = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	fail(err)
	st.dumpable, err = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fail(err)
	pers, _, errno := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if errno != 0 {
		st.err = true
	}
	st.personality = int(pers)
	return st
}

// keepStatus is the lines of status that statusFields name, in their
// order there, as one string (one allocation: the check runs after
// every task).
func (r *stateReader) keepStatus(status []byte) string {
	out := r.lines[:0]
	for len(status) > 0 {
		line := status
		if i := bytes.IndexByte(status, '\n'); i >= 0 {
			line, status = status[:i+1], status[i+1:]
		} else {
			status = nil
		}
		for _, f := range statusFields {
			if bytes.HasPrefix(line, f) {
				out = append(out, line...)
				if line[len(line)-1] != '\n' {
					out = append(out, '\n')
				}
				break
			}
		}
	}
	r.lines = out
	return string(out)
}

// threadOf reads thread tid's scheduling attributes, affinity and I/O
// priority.
func threadOf(tid int) (threadState, error) {
	var ts threadState
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return ts, err
	}
	ts.sched = *attr
	if err := unix.SchedGetaffinity(tid, &ts.affinity); err != nil {
		return ts, err
	}
	const ioprioWhoProcess = 1
	prio, _, errno := unix.RawSyscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	if errno != 0 {
		return ts, errno
	}
	ts.ioprio = int(prio)
	return ts, nil
}

// otherThreadsDiffer reports whether a thread of this process other than
// tid has scheduling other than want. The runtime starts threads from
// threads that all began as copies of the first, so any difference is
// something done to the process from outside. A thread that ends while
// it is read is skipped. The thread list is read from the held
// /proc/self/task, from its start again.
func (r *stateReader) otherThreadsDiffer(tid int, want *threadState) bool {
	if r.tasks < 0 {
		return true
	}
	if _, err := unix.Seek(r.tasks, 0, 0); err != nil {
		return true
	}
	names := r.names[:0]
	defer func() { r.names = names[:0] }()
	for {
		n, err := unix.ReadDirent(r.tasks, r.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return true
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(r.buf[:n], -1, names)
	}
	for _, name := range names {
		t, err := strconv.Atoi(name)
		if err != nil || t == tid {
			continue
		}
		ts, err := threadOf(t)
		if err == unix.ESRCH {
			continue
		}
		if err != nil || ts != *want {
			return true
		}
	}
	return false
}

// ReadFileAt reads a small file (of /proc or /sys) named relative to the
// directory dfd (unix.AT_FDCWD: the working directory) with plain system
// calls: never through the runtime's poller (see ChildrenOf).
func ReadFileAt(dfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []byte
	var buf [4096]byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}
