//go:build linux

package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// The serve protocol. A serving supervisor (argv Arg0 "serve") holds a
// unix SOCK_SEQPACKET socket on fd 3 for its whole life and runs one task
// per message on it, one task at a time. A message is the byte ServeRun
// followed by the task's Spec (encoded as on fd 3 of a one-shot
// supervisor, at most MaxServeSpec bytes: a larger task gets a supervisor
// of its own), with the task's descriptors attached (SCM_RIGHTS), in the
// order of the Serve* indexes: the status pipe's write end, the control
// pipe's read end, the task's working directory (opened), the program's
// stdin and output, with Spec.Stderr its stderr and, with Spec.Cgroup,
// the task's cgroup directory last. One message, one
// recvmsg: the spec needs no pipe of its own. Then it is the one-shot
// supervisor on those descriptors: reports "started" and "exited" on the
// status pipe, obeys 'T' and 'K' and EOF on the control pipe, reaps until
// wait4 says ECHILD. Once nothing of the task is left it closes its end
// of the control pipe (a command after that finds nothing to act on),
// reports "idle" when it may serve again, else "reaped" (nothing of the
// task is left either way: without a cgroup the runner has no other
// word for it), and closes the status pipe: EOF there is the runner's
// sign that the supervisor is done with the task. Without "idle" the
// supervisor exits and the runner must not reuse it. EOF on
// the socket (the runner is gone, or closed the pool), a protocol error
// or SIGTERM, SIGINT or SIGHUP (its parent-death signal is SIGTERM): it
// kills the task it runs, if any, and exits.
const ServeRun = 'R'

// The descriptors of a serve message, in order.
const (
	ServeStatus = iota
	ServeCtl
	ServeDir
	ServeStdin
	ServeOut
	ServeErr
)

// MaxServeFDs is the most a message carries: a message with more is
// refused (after closing them all), as is one the kernel had to truncate.
// The runner gives a task that would need more (many Options.Writable
// trees) a supervisor of its own.
const MaxServeFDs = 12

// MaxServeSpec bounds the spec a serve message carries: well under a unix
// socket's default send buffer (about 208 KiB), and the receive buffer a
// serving supervisor keeps for its life. A spec that long (a task with a
// large environment) is refused as truncated; the runner gives such a
// task a supervisor of its own instead.
const MaxServeSpec = 64 << 10

// serve is the long-lived supervisor. Its process state must not depend
// on a task: it refuses a spec with a mount view of the supervisor's (a
// task's own process makes its view: Spec.StageView), and a PID
// namespace or ID maps other than its own (ids: see below; strict's
// supervisors are made for one task by the runner), and after
// each task it checks that its whole process state (procState: limits,
// every thread's scheduling, affinity and I/O priority, cgroup,
// credentials, signals and the rest) is what it was when it started; a
// task running as the same user could have changed some of it (prlimit,
// sched_setattr, ioprio_set, ...), and such a supervisor exits instead of
// serving again.
//
// Its goroutine is not locked to a thread: a program's parent-death signal is tied to the thread
// that forked it, and the Go runtime ends a thread only when a goroutine
// locked to it returns, which nothing in this process does (the
// one-shot supervisor is not locked either). Unlocked, yielding the
// thread is cheap, which its raw waits do (waitReadable).
func serve(ids string) int {
	MarkCloexecFrom(3)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return exitcode.Internal
	}
	// ids "UID:GID" (mode "serve:UID:GID"): started as PID 1 of new user
	// and PID namespaces, which serve the tasks that want them
	// (Spec.PIDNS). Mapping the ids can fail where a security module
	// defangs the user namespace: every task is then refused with why,
	// for the runner to go without.
	pidns, nsErr := ids != "", error(nil)
	if pidns {
		u, g, _ := strings.Cut(ids, ":")
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if nsErr = errors.Join(err1, err2); nsErr == nil {
			nsErr = mapIDs(uid, gid)
		}
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return exitcode.Internal
	}
	if err := unix.Chdir("/"); err != nil {
		return exitcode.Internal
	}
	states := newStateReader()
	srv := &server{states: states, state: states.read(), buf: make([]byte, 1+MaxServeSpec+1), pidns: pidns, nsErr: nsErr}
	go func() {
		<-sigs
		srv.stop()
	}()
	sock := []unix.PollFd{{Fd: 3, Events: unix.POLLIN}}
	for {
		sock[0].Revents = 0
		if err := waitReadable(sock, true); err != nil {
			return exitcode.Internal
		}
		spec, fds, err := recvTask(3, srv.buf)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			return exitcode.Internal
		}
		if again, code := srv.run(spec, fds); !again {
			return code
		}
	}
}

// server is a serving supervisor: the task it runs, if any, and whether
// a signal told it to stop.
type server struct {
	states  *stateReader
	state   procState
	buf     []byte // one message: ServeRun and the spec, one byte over to see truncation
	mu      sync.Mutex
	cur     *supervisor
	stopped bool
	// pidns: this supervisor is PID 1 of user and PID namespaces of its
	// own (serve's arguments), nsErr why mapping its ids failed.
	pidns bool
	nsErr error
}

// stop is the signal handler: kill the task (the serve loop exits once it
// is reaped), or, idle, exit at once — nothing of a task exists then.
func (srv *server) stop() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.stopped = true
	if srv.cur == nil {
		os.Exit(0)
	}
	srv.cur.kill()
}

// recvTask receives one message into buf: the spec it carries and its
// descriptors, checked for number and truncation, and close-on-exec from
// the start (MSG_CMSG_CLOEXEC).
func recvTask(sock int, buf []byte) (spec []byte, fds []int, err error) {
	var oob [72]byte // unix.CmsgSpace(MaxServeFDs*4) is 64
	var n, oobn, flags int
	for {
		n, oobn, flags, _, err = unix.Recvmsg(sock, buf, oob[:unix.CmsgSpace(MaxServeFDs*4)], unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for i := range msgs {
			if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	bad := flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || n < 1 || n > 1+MaxServeSpec || buf[0] != ServeRun ||
		len(fds) < ServeErr || len(fds) > MaxServeFDs
	if n == 0 && oobn == 0 {
		return nil, nil, io.EOF
	}
	if bad {
		closeAll(fds)
		return nil, nil, fmt.Errorf("shim: bad serve message (%d bytes, %d descriptors, flags %#x)", n, len(fds), flags)
	}
	return buf[1:n], fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// run runs one task on fds and reports whether this supervisor may
// serve another, and if not its exit status.
func (srv *server) run(spec []byte, fds []int) (again bool, code int) {
	status := os.NewFile(uintptr(fds[ServeStatus]), "status")
	defer status.Close()
	s, err := decodeSpec(spec)
	errFD, cgroupFD := fds[ServeOut], -1
	switch {
	case err != nil:
	case srv.nsErr != nil:
		err = fmt.Errorf(msgUserNS+"%w", srv.nsErr)
	case s.View != nil || s.PIDNS != srv.pidns || s.MapIDs && !srv.pidns:
		err = fmt.Errorf("shim: a serving supervisor (PID namespace %v) runs no task with a mount view of its own, another PID namespace or other ID maps", srv.pidns)
	case len(fds) != ServeErr+b2i(s.Stderr)+b2i(s.Cgroup)+s.RWTrees:
		err = fmt.Errorf("shim: %d descriptors for a task with stderr=%v, cgroup=%v and %d writable trees", len(fds), s.Stderr, s.Cgroup, s.RWTrees)
	default:
		if s.Stderr {
			errFD = fds[ServeErr]
		}
		if s.Cgroup { // closed once the program started in it (error paths: with the rest)
			cgroupFD = fds[ServeErr+b2i(s.Stderr)]
		}
	}
	if err != nil {
		closeAll(fds[ServeCtl:])
		return false, reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	// The program starts in the directory the runner opened and checked,
	// through its descriptor: never a path resolved again.
	err = unix.Fchdir(fds[ServeDir])
	unix.Close(fds[ServeDir])
	if err != nil {
		closeAll(fds[ServeCtl:ServeDir])
		closeAll(fds[ServeStdin:])
		return false, reportErr(status, exitcode.Errorf(exitcode.Internal, "task directory: %w", err))
	}
	// Belt and braces: the descriptors came close-on-exec, and nothing
	// else of this process may reach the program either.
	MarkCloexecFrom(3)
	tf := taskFDs{stdin: fds[ServeStdin], out: fds[ServeOut], err: errFD, ctl: fds[ServeCtl], rw: fds[len(fds)-s.RWTrees:], status: status, cgroup: cgroupFD}
	srv.mu.Lock()
	if srv.stopped {
		srv.mu.Unlock()
		closeAll(fds[ServeCtl:ServeDir])
		closeAll(fds[ServeStdin:])
		return false, 0
	}
	sv, err := startTask(s, tf) // under mu: a signal handler sees the task only once it exists
	if sv != nil {
		sv.raw = true
	}
	if cgroupFD >= 0 {
		unix.Close(cgroupFD)
	}
	srv.cur = sv
	srv.mu.Unlock()
	if err != nil {
		unix.Close(tf.ctl)
		return false, reportErr(status, err)
	}
	sv.supervise()
	srv.mu.Lock()
	srv.cur = nil
	again = !srv.stopped
	srv.mu.Unlock()
	cwdErr := unix.Chdir("/")
	st := srv.states.read()
	again = cwdErr == nil && again && st.same(&srv.state)
	// supervise returned: wait4 said ECHILD, nothing of the task is left.
	// "idle" says that too (and that this supervisor takes another task);
	// without a cgroup, the runner has no other way to know it.
	if again {
		report(status, Msg{Event: "idle"})
	} else {
		report(status, Msg{Event: "reaped"})
	}
	return again, 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
