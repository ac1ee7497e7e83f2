//go:build linux

package execx

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

func (pl *plan) shimSpec(supervise bool) *shimSpec {
	s := &shimSpec{
		Path:      pl.path,
		Argv:      pl.argv,
		Env:       pl.env,
		Rlimits:   pl.iso.rlimits,
		NNP:       pl.iso.nnp,
		Landlock:  pl.iso.landlock,
		PIDNS:     pl.iso.namespaces,
		Supervise: supervise,
	}
	if s.Landlock > 0 {
		s.RW = pl.landlockRW()
	}
	return s
}

// applyRestrictions applies, to this locked thread and this process,
// what must hold before the program runs: no_new_privs and Landlock
// (thread), then rlimits (process), address space last.
func applyRestrictions(s *shimSpec) error {
	switch {
	case s.Landlock > 0:
		if err := applyLandlock(s.Landlock, s.RW); err != nil {
			return exitcode.Errorf(exitcode.Internal, "isolation: %w", err)
		}
	case s.NNP:
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return exitcode.Errorf(exitcode.Internal, "no_new_privs: %w", err)
		}
	}
	return applyRlimits(s.Rlimits)
}

// shimSupervise is the per-task supervisor: child subreaper (and PID 1
// under strict), it starts the program, reports its exit, reaps every
// process of the task, and on the runner's command — or the runner's
// death — kills them all. It owns all waiting in its process, so its
// wait4(-1) races nobody.
func shimSupervise() int {
	runtime.LockOSThread() // the program's Pdeathsig is tied to this thread
	status := os.NewFile(4, "status")
	for _, fd := range []int{4, 5, 6} {
		unix.CloseOnExec(fd)
	}
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "child subreaper: %w", err))
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)

	var pid int
	if len(s.Rlimits) == 0 {
		// Restrict this thread and fork the program from it: the program
		// inherits the thread's Landlock domain and no_new_privs.
		if err := applyRestrictions(s); err != nil {
			return reportErr(status, err)
		}
		pid, err = syscall.ForkExec(s.Path, s.Argv, &syscall.ProcAttr{
			Env:   s.Env,
			Files: []uintptr{0, 6, 6},
			Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		})
		if err != nil {
			return reportErr(status, startError(s.Path, err))
		}
	} else {
		// rlimits are per process and would bind this Go process too:
		// an exec stage applies everything and becomes the program.
		if pid, err = forkExecStage(s); err != nil {
			return reportErr(status, err)
		}
	}
	// Hold neither the program's stdin nor its output pipe: EOF on them
	// must mean the task's processes closed them.
	if null, err := unix.Open(os.DevNull, unix.O_RDWR, 0); err == nil {
		_ = unix.Dup3(null, 0, 0)
		unix.Close(null)
	}
	unix.Close(6)
	report(status, shimMsg{Event: "started"})

	ctl := make(chan byte, 4)
	go func() {
		f := os.NewFile(5, "control")
		b := make([]byte, 1)
		for {
			if n, err := f.Read(b); n == 1 {
				ctl <- b[0]
			} else if err != nil {
				ctl <- 'K' // the runner is gone: nothing of the task may outlive it
				return
			}
		}
	}()

	sv := &supervisor{target: pid, pidns: s.PIDNS, status: status}
	for {
		select {
		case sig := <-sigs:
			if sig == unix.SIGCHLD {
				if sv.reap() {
					return 0
				}
				continue
			}
			sv.killAll()
			return 0
		case c := <-ctl:
			if c == 'T' {
				sv.signalAll(unix.SIGTERM)
				continue
			}
			sv.killAll()
			return 0
		}
	}
}

type supervisor struct {
	target     int
	targetDone bool
	pidns      bool
	status     *os.File
}

// reap collects every exited child without blocking, reporting the
// program's own end. It returns true when the program has ended and no
// process of the task is left.
func (sv *supervisor) reap() bool {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		switch {
		case pid > 0:
			if pid == sv.target && !sv.targetDone {
				sv.targetDone = true
				report(sv.status, shimMsg{Event: "exited", Status: uint32(ws),
					UserUS: ru.Utime.Nano() / 1000, SysUS: ru.Stime.Nano() / 1000, MaxRSS: ru.Maxrss})
			}
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.ECHILD):
			return sv.targetDone
		default:
			return false
		}
	}
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
	for _, p := range descendants(os.Getpid()) {
		_ = unix.Kill(p, sig)
	}
}

// killAll kills and reaps every process of the task until none is left.
func (sv *supervisor) killAll() {
	for {
		sv.signalAll(unix.SIGKILL)
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if pid == sv.target && !sv.targetDone {
			sv.targetDone = true
			report(sv.status, shimMsg{Event: "exited", Status: uint32(ws),
				UserUS: ru.Utime.Nano() / 1000, SysUS: ru.Stime.Nano() / 1000, MaxRSS: ru.Maxrss})
		}
		if errors.Is(err, unix.ECHILD) {
			return
		}
	}
}

// forkExecStage starts the exec shim as the program's process: it applies
// no_new_privs, Landlock and rlimits to itself and execs the program.
func forkExecStage(s *shimSpec) (int, error) {
	sh, err := newShimPipes(false)
	if err != nil {
		return 0, err
	}
	defer sh.closeAll()
	pid, err := syscall.ForkExec(selfExe(), []string{shimArg0, "exec"}, &syscall.ProcAttr{
		Env:   shimEnv,
		Files: []uintptr{0, 6, 6, sh.specR.Fd(), sh.statusW.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, startError(selfExe(), err)
	}
	sh.closeChildEnds()
	stage := *s
	stage.Supervise = false
	if err := sh.handshake(&stage); err != nil {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return 0, err
	}
	return pid, nil
}
