//go:build linux

package shim

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// supervise is the per-task supervisor: child subreaper (and PID 1
// under strict), it starts the program, reports its exit, reaps every
// process of the task, and on the runner's command — or the runner's
// death — kills them all. It owns all waiting in its process, so its
// wait4(-1) races nobody.
func supervise() int {
	runtime.LockOSThread() // the program's Pdeathsig is tied to this thread
	status := os.NewFile(4, "status")
	// Its own pipes (4-7) and anything else above 2 the runner let
	// through: the program gets 0-2 only, which ForkExec passes on by
	// clearing the flag on its copies.
	MarkCloexecFrom(3)
	// The runner's death (SIGTERM, our parent-death signal) must not end
	// this process by default action once a process of the task may
	// exist: caught from here on, acted on once the task is known.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "child subreaper: %w", err))
	}
	if s.MapIDs {
		if err := mapIDs(s.UID, s.GID); err != nil {
			return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: user namespace: %w", err))
		}
	}
	// Nobody may ptrace this process or read it through /proc: the task
	// runs as the same user (and, under strict, in the same user namespace).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "non-dumpable: %w", err))
	}
	if s.View != nil {
		if err := s.View.Setup(); err != nil {
			return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: mount view: %w", err))
		}
	}
	var pid int
	if s.Direct {
		// Nothing to apply but a new session: fork does that.
		pid, err = syscall.ForkExec(s.Stage.Path, s.Stage.Argv, &syscall.ProcAttr{
			Env:   s.Stage.Env,
			Files: []uintptr{0, OutFD, s.errFD()},
			Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
		})
		if err != nil {
			return reportErr(status, StartError(s.Stage.Path, err))
		}
	} else if pid, err = forkExecStage(s); err != nil {
		// The exec stage applies everything to itself and becomes the
		// program: this process stays unrestricted.
		return reportErr(status, err)
	}
	// Hold neither the program's stdin nor its output pipes: EOF on them
	// must mean the task's processes closed them.
	if null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup3(null, 0, 0)
		unix.Close(null)
	}
	unix.Close(OutFD)
	if s.Stderr {
		unix.Close(ErrFD)
	}
	report(status, Msg{Event: "started"})

	sv := &supervisor{target: pid, pidns: s.PIDNS, status: status}
	// Commands from the runner, and the runner's death (its parent-death
	// signal, or EOF on the control pipe), are acted on from their own
	// goroutines: signalling needs nothing from the reaping loop below.
	go func() {
		<-sigs
		sv.kill()
	}()
	go func() {
		f := os.NewFile(5, "control")
		b := make([]byte, 1)
		for {
			n, err := f.Read(b)
			switch {
			case n == 1 && b[0] == 'T':
				sv.signalAll(unix.SIGTERM)
			case n == 1:
				sv.kill()
			case err != nil: // the runner is gone: nothing of the task may outlive it
				sv.kill()
				return
			}
		}
	}()
	sv.reapAll()
	return 0
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

// supervisor is the state of a supervise shim. Only reapAll waits; kill
// and signalAll may be called from any goroutine.
type supervisor struct {
	target  int
	pidns   bool
	status  *os.File
	killing atomic.Bool
}

// reapAll is the supervisor's whole life once the program started: it
// blocks in wait4(-1) — it is the only waiter in this process, so it
// steals nobody's status — reports the program's end when it comes, and
// returns when no process of the task is left. Once kill was asked for,
// every reaped process is followed by another SIGKILL round, for the
// orphans its death handed to us.
func (sv *supervisor) reapAll() {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: nothing of the task is left
			return
		}
		if pid == sv.target {
			report(sv.status, Msg{Event: "exited", Status: uint32(ws),
				UserUS: ru.Utime.Nano() / 1000, SysUS: ru.Stime.Nano() / 1000, MaxRSS: ru.Maxrss})
		}
		if sv.killing.Load() {
			sv.signalAll(unix.SIGKILL)
		}
	}
}

// kill makes every process of the task die; reapAll collects them and the
// supervisor exits when none is left.
func (sv *supervisor) kill() {
	sv.killing.Store(true)
	sv.signalAll(unix.SIGKILL)
}

// signalAll sends sig to every process of the task: in its own PID
// namespace kill(-1) reaches them all; otherwise the program's group and
// every descendant of the supervisor (escapees included: as subreaper it
// inherits them).
func (sv *supervisor) signalAll(sig unix.Signal) {
	if sv.pidns {
		_ = unix.Kill(-1, sig)
		return
	}
	_ = unix.Kill(-sv.target, sig)
	for _, p := range Descendants(os.Getpid()) {
		_ = unix.Kill(p, sig)
	}
}

// forkExecStage starts the exec stage as the program's process, in a new
// session: it applies every restriction to itself and execs the program.
// The stage is this supervisor's own binary (/proc/self/exe: the very file
// the runner checked and started, even if it was replaced since), so a
// supervisor that is the minimal binary starts a minimal stage too.
func forkExecStage(s *Spec) (int, error) {
	sh, err := NewPipes(false)
	if err != nil {
		return 0, err
	}
	defer sh.CloseAll()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{Arg0, "exec"}, &syscall.ProcAttr{
		Env:   Env,
		Files: []uintptr{0, OutFD, s.errFD(), sh.SpecR.Fd(), sh.StatusW.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, StartError("/proc/self/exe", err)
	}
	sh.CloseChildEnds()
	if err := sh.Handshake(&Spec{Stage: s.Stage}); err != nil {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return 0, err
	}
	return pid, nil
}
