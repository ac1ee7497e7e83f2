//go:build linux

package shim

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/termsig"
	"github.com/art-runtime/art/lib/exitcode"
)

// supervise is the per-task supervisor: child subreaper (and PID 1
// under strict), it starts the program, reports its exit, reaps every
// process of the task, and on the runner's command — or the runner's
// death — kills them all. It owns all waiting in its process, so its
// wait4(-1) races nobody. It serves one task and exits; serve is the
// long-lived form of the same supervisor.
func supervise() int {
	// The program's parent-death signal is tied to the thread that forks
	// it, which must outlive it: no goroutine of this process ends locked
	// to its thread (the only way the Go runtime ends a thread), so any
	// thread will do and none is locked (a locked one costs this
	// short-lived process the runtime's template thread and hand-offs).
	status := os.NewFile(4, "status")
	// Its own pipes (4-7) and anything else above 2 the runner let
	// through: the program gets 0-2 only, which ForkExec passes on by
	// clearing the flag on its copies.
	MarkCloexecFrom(3)
	// The runner's death (SIGTERM, our parent-death signal) must not end
	// this process by default action once a process of the task may
	// exist: caught from here on, acted on once the task is known.
	// termsig, not os/signal: the latter's first Notify starts a goroutine
	// locked to a thread of its own (see internal/termsig).
	sigs, _ := termsig.Catch(unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "child subreaper: %w", err))
	}
	if s.MapIDs {
		if err := mapIDs(s.UID, s.GID); err != nil {
			return reportErr(status, exitcode.Errorf(exitcode.Internal, msgUserNS+"%w", err))
		}
	}
	// Nobody may ptrace this process or read it through /proc: the task
	// runs as the same user (and, under strict, in the same user namespace).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "non-dumpable: %w", err))
	}
	rw := make([]int, s.RWTrees)
	for i := range rw {
		rw[i] = RWFD + i
	}
	if s.View != nil {
		if err := s.View.Setup(rw); err != nil {
			return reportErr(status, exitcode.Errorf(exitcode.Internal, msgView+"%w", err))
		}
	}
	if err := setupNet(s); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: network: %w", err))
	}
	tf := taskFDs{stdin: 0, out: OutFD, err: int(s.errFD()), ctl: 5, rw: rw, status: status, cgroup: -1}
	if s.Cgroup {
		tf.cgroup = CgroupFD
	}
	sv, err := startTask(s, tf)
	if err != nil {
		return reportErr(status, err)
	}
	go func() {
		<-sigs
		sv.kill()
	}()
	sv.supervise()
	return 0
}

// taskFDs are one task's descriptors in its supervisor: the program's
// stdin, output and stderr (the same as out without Spec.Stderr), the
// runner's control pipe, the status pipe the reports go to and the
// task's cgroup (-1: none). The one-shot supervisor has them at fixed
// numbers (0, 6, 7, 5, 4, CgroupFD); a serving one at whatever
// numbers they were received as.
type taskFDs struct {
	stdin, out, err, ctl int
	rw                   []int // the writable trees (Spec.RWTrees)
	status               *os.File
	cgroup               int
}

// intoCgroup starts a child in the task's cgroup, if it has one.
func (fds *taskFDs) intoCgroup(sys *syscall.SysProcAttr) *syscall.SysProcAttr {
	if fds.cgroup >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, fds.cgroup
	}
	return sys
}

// startTask starts the program of s — with ForkExec (Direct) or as a
// child that restricts itself first (startRestricted) — in a new session, lets go of the program's stdin and
// output, and reports "started". On error nothing of the task runs.
func startTask(s *Spec, fds taskFDs) (*supervisor, error) {
	if runnerGone(fds.ctl) {
		return nil, exitcode.Errorf(exitcode.Internal, "shim: the runner is gone: the task is not started")
	}
	var pid int
	var err error
	if s.Direct {
		// Nothing to apply but a new session: fork does that.
		pid, err = syscall.ForkExec(s.Stage.Path, s.Stage.Argv, &syscall.ProcAttr{
			Env:   s.Stage.Env,
			Files: []uintptr{uintptr(fds.stdin), uintptr(fds.out), uintptr(fds.err)},
			Sys:   fds.intoCgroup(&syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}),
		})
		if err != nil {
			return nil, StartError(s.Stage.Path, err)
		}
	} else if pid, err = startRestricted(s, &fds); err != nil {
		// The task's own process applies everything to itself between
		// fork and execve: this process stays unrestricted.
		return nil, err
	}
	// Hold neither the program's stdin nor its output pipes: EOF on them
	// must mean the task's processes closed them. Descriptor 0 is kept
	// open (on /dev/null) so nothing else gets that number.
	if fds.stdin == 0 {
		if null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
			_ = unix.Dup3(null, 0, 0)
			unix.Close(null)
		}
	} else {
		unix.Close(fds.stdin)
	}
	unix.Close(fds.out)
	if fds.err != fds.out {
		unix.Close(fds.err)
	}
	closeAll(fds.rw)
	report(fds.status, Msg{Event: "started"})
	return &supervisor{target: pid, pidns: s.PIDNS, status: fds.status, ctl: fds.ctl}, nil
}

// mapIDs maps uid and gid (ours in the parent namespace) to themselves in
// our new user namespace; setgroups must be denied first. The files are
// our own only while we are dumpable, which the runner's non-dumpable
// flag, inherited through fork, took away: set it back for the writes,
// before any process of the task exists (the caller then clears it).
func mapIDs(uid, gid int) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		return err
	}
	for _, w := range []struct{ file, data string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)},
		{"/proc/self/gid_map", fmt.Sprintf("%d %d 1\n", gid, gid)},
	} {
		if err := os.WriteFile(w.file, []byte(w.data), 0); err != nil {
			return err
		}
	}
	return nil
}

// supervisor is the state of one supervised task. Only reapAll waits;
// kill and signalAll may be called from any goroutine.
type supervisor struct {
	target int
	pidns  bool
	status *os.File
	ctl    int
	// raw: wait with raw system calls first (waitReadable); a serving
	// supervisor's.
	raw     bool
	killing atomic.Bool
	// ended: the program has ended (supervise); a kill from then on
	// first counts what is left and reports it ("killed").
	ended atomic.Bool
	// done: reapAll saw ECHILD, nothing of the task is left. A kill
	// asked for later (the runner's last 'K', the control pipe's EOF) has
	// nothing to do, and must not signal the program's process group id,
	// which no longer belongs to the task.
	done atomic.Bool
}

// supervise is the task's whole life once the program started, on the
// calling goroutine alone: it polls the control pipe and a pidfd
// of the program, acting on the runner's commands ('T': SIGTERM to the
// task, anything else or EOF — the runner is done, or gone — SIGKILL to
// all of it) until the program ends; then reaps what has ended, and while
// processes of the task are left (orphans it inherited) waits for the
// runner's next command; once killing, reaps until wait4 says ECHILD. It
// returns, closing its end of the control pipe, when no process of the
// task is left: a command the runner sends after that has nothing to act
// on (the runner's write fails with EPIPE, which it ignores). One thread,
// no goroutine and no second blocked thread per task: that is most of a
// pooled task's cost in this process. Without pidfds (Linux before 5.3)
// it falls back to superviseThreads.
func (sv *supervisor) supervise() {
	pfd, err := unix.PidfdOpen(sv.target, 0)
	if err != nil {
		sv.superviseThreads()
		return
	}
	defer unix.Close(pfd)
	defer unix.Close(sv.ctl)
	eof := false
	fds := []unix.PollFd{{Fd: int32(sv.ctl), Events: unix.POLLIN}, {Fd: int32(pfd), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if err := waitReadable(fds, sv.raw); err != nil { // cannot happen: go on as if the program had ended
			break
		}
		if fds[0].Revents != 0 && !eof {
			if eof = sv.command(); eof {
				fds[0].Fd = -1 // poll skips it from now on
			}
		}
		if fds[1].Revents != 0 {
			break
		}
	}
	// The program ended: while orphans of the task are left and nobody
	// asked for the kill, only the runner's next command can end them.
	// (EOF kills, so the loop ends there too.)
	sv.ended.Store(true)
	for !sv.killing.Load() && sv.reapReady() {
		sv.command()
	}
	sv.reapAll()
}

// command reads and obeys one command of the runner on the control pipe
// and reports whether that was its EOF.
func (sv *supervisor) command() (eof bool) {
	var b [1]byte
	n, err := unix.Read(sv.ctl, b[:])
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Read(sv.ctl, b[:])
	}
	switch {
	case n == 1 && b[0] == 'T':
		sv.signalAll(unix.SIGTERM)
	case n == 1:
		sv.kill()
	default: // the runner is done, or gone: nothing of the task may outlive it
		sv.kill()
		return true
	}
	return false
}

// superviseThreads is supervise without pidfds: commands from the runner
// and its death (EOF on the control pipe) are acted on from their own
// goroutine while reapAll collects every process of the task; it returns
// once both are done (the runner closes the control pipe when it is done
// with the task).
func (sv *supervisor) superviseThreads() {
	ctlDone := make(chan struct{})
	go func() {
		defer close(ctlDone)
		defer unix.Close(sv.ctl)
		for !sv.command() {
		}
	}()
	sv.reapAll()
	<-ctlDone
}

// reapAll blocks in wait4(-1) — it is the only waiter in this process, so
// it steals nobody's status — reports the program's end when it comes,
// and returns when no process of the task is left. Once kill was asked
// for, every batch of reaped processes is followed by another SIGKILL
// round (see reap).
func (sv *supervisor) reapAll() {
	defer sv.done.Store(true)
	sv.reap(0)
}

// reapReady reaps, without blocking, every process of the task that has
// ended, and reports whether any is left.
func (sv *supervisor) reapReady() bool { return sv.reap(unix.WNOHANG) }

// reap collects processes of the task with wait4(-1, opts) until none is
// left (false) or, with WNOHANG, none has ended yet (true). Once a kill
// is under way, each batch of ended processes — everything that has
// ended by then — is followed by one more SIGKILL round, for the
// orphans their deaths handed to us: one walk of the task's processes
// per batch, not per process, so a task that piles up zombies (a fork
// and exit loop) does not make each round longer than the last.
func (sv *supervisor) reap(opts int) (left bool) {
	for {
		pid, err := sv.wait4(opts)
		switch {
		case err != nil: // ECHILD: nothing of the task is left
			return false
		case pid == 0: // WNOHANG: children left, none ended
			return true
		}
		for pid > 0 && err == nil {
			pid, err = sv.wait4(unix.WNOHANG)
		}
		if sv.killing.Load() {
			sv.signalAll(unix.SIGKILL)
		}
	}
}

// wait4 collects one process of the task with wait4(-1, opts) and
// reports the program's end when it is the one.
func (sv *supervisor) wait4(opts int) (int, error) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, opts, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && pid == sv.target {
			report(sv.status, Msg{Event: "exited", Status: uint32(ws),
				UserUS: ru.Utime.Nano() / 1000, SysUS: ru.Stime.Nano() / 1000, MaxRSS: ru.Maxrss})
		}
		return pid, err
	}
}

// kill makes every process of the task die; reapAll collects them. The
// first kill after the program ended reports how many processes of the
// task were left then ("killed", the count in Code): the Result's
// killed_at_end where the runner has no cgroup to count them in.
func (sv *supervisor) kill() {
	if sv.killing.CompareAndSwap(false, true) && sv.ended.Load() && !sv.done.Load() {
		if n := len(descendantsOfSelf()); n > 0 {
			report(sv.status, Msg{Event: "killed", Code: n})
		}
	}
	sv.signalAll(unix.SIGKILL)
}

// signalAll sends sig to every process of the task: in its own PID
// namespace kill(-1) reaches them all; otherwise the program's group and
// every descendant of the supervisor (escapees included: as subreaper it
// inherits them).
func (sv *supervisor) signalAll(sig unix.Signal) {
	if sv.done.Load() {
		return
	}
	if sv.pidns {
		_ = unix.Kill(-1, sig)
		return
	}
	_ = unix.Kill(-sv.target, sig)
	for _, p := range descendantsOfSelf() {
		_ = unix.Kill(p, sig)
	}
}
