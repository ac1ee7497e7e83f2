//go:build linux || darwin

package execx

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/exitcode"
)

// reapWait bounds how long the runner waits for killed processes to be
// reaped (a process in uninterruptible sleep ignores even SIGKILL for a
// while) before it gives up on them.
const reapWait = 5 * time.Second

var (
	// procMu orders starting a direct child (and registering it in live)
	// against an orphan sweep, so a sweep never mistakes another run's
	// just-started child for an orphan.
	procMu sync.Mutex
	// live holds the pids of direct children execx started and has not
	// reaped yet.
	live = map[int]bool{}
)

// start starts the task with stdin, out as its standard output and errw
// as its standard error (nil: out, one stream). It first marks every
// descriptor from 3 up close-on-exec, so that nothing the runner
// inherited without the flag reaches the task (see sweepFDs): every time,
// not once, because a descriptor can also be made without the flag after
// the first run, and it costs one close_range call.
func start(pl *plan, stdin, out, errw *os.File) (proc, error) {
	sweepFDs()
	if pl.iso.supervise {
		return startSupervised(pl, stdin, out, errw)
	}
	return startLocal(pl, stdin, out, errw)
}

// startProcess starts a child from the calling goroutine and waits for
// it on a goroutine of its own.
//
// The child's parent-death signal (Pdeathsig) fires when the thread that
// forked it exits, not only when this process does. A Go thread exits
// only when a goroutine ends while locked to it (runtime.LockOSThread
// without UnlockOSThread), which nothing in a process running execx does:
// the nofile tracer below and the Pool's forker unlock before they
// return, os/signal's locked goroutine never returns, and no dependency
// of the binaries that link execx locks a thread. So the fork needs no
// thread of its own: locking one cost the runner two thread starts (the
// locked thread, and the runtime's template thread any lock starts) and
// the futex hand-offs each time the locked goroutine parked.
// TestRunnerKilledTakesTaskWithIt kills the runner and sees the
// supervisor and the task go.
//
// A child started traced (SysProcAttr.Ptrace: stopped at its execve,
// see stopAtExec) is forked from a locked thread, which ptrace requires
// of the tracer's calls, and unlocked once it is let go untraced.
func startProcess(path string, argv []string, attr *os.ProcAttr) (pid int, waited <-chan exitInfo, err error) {
	// syscall.ForkExec, not os.StartProcess: the latter's first call forks
	// an extra child to probe pidfd support, a whole process spawn more
	// than a single-task runner needs.
	return startWith(syscall.ForkExec, path, argv, attr)
}

// startWith is startProcess with spawn (syscall.ForkExec or one with its
// signature) starting the child.
func startWith(spawn func(string, []string, *syscall.ProcAttr) (int, error), path string, argv []string,
	attr *os.ProcAttr) (pid int, waited <-chan exitInfo, err error) {
	traced := attr.Sys != nil && attr.Sys.Ptrace
	if traced {
		runtime.LockOSThread() // the tracer is this thread
	}
	files := make([]uintptr, len(attr.Files))
	for i, f := range attr.Files {
		files[i] = f.Fd() // a nil file's is -1: that descriptor is closed
	}
	procMu.Lock()
	pid, err = spawn(path, argv, &syscall.ProcAttr{Dir: attr.Dir, Env: attr.Env, Files: files, Sys: attr.Sys})
	if err != nil {
		procMu.Unlock()
		if traced {
			runtime.UnlockOSThread()
		}
		return 0, nil, shim.StartError(path, err)
	}
	live[pid] = true
	procMu.Unlock()
	var ex exitInfo
	ended := false
	if traced {
		ex, ended = stopAtExec(pid)
		runtime.UnlockOSThread()
	}
	wc := make(chan exitInfo, 1)
	go func() {
		if !ended {
			// wait4 on this one pid never steals another child's status.
			ex = waitChild(pid, len(argv) == 2 && argv[0] == shim.Arg0 && argv[1] == "supervise")
		}
		procMu.Lock()
		delete(live, pid)
		procMu.Unlock()
		wc <- ex
	}()
	return pid, wc, nil
}

// localProc is a task whose main process is our direct child: the program
// itself, or the exec shim that became the program. The runner is the
// task's subreaper.
type localProc struct {
	pid    int
	since  uint64 // clock ticks since boot just before the direct child started
	waited <-chan exitInfo
}

func startLocal(pl *plan, stdin, out, errw *os.File) (proc, error) {
	if err := ensureSubreaper(); err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "child subreaper: %w", err)
	}
	if errw == nil {
		errw = out
	}
	attr := &os.ProcAttr{
		Dir:   dirOf(pl),
		Env:   pl.env,
		Files: []*os.File{stdin, out, errw},
		Sys:   childAttr(),
	}
	path, argv := wrapCommand(pl)
	since := bootTicks()
	var sh *shim.Pipes
	if len(pl.iso.rlimits) > 0 { // per process: the exec stage applies them
		var err error
		if sh, err = shim.NewPipes(false); err != nil {
			return nil, err
		}
		defer sh.CloseAll()
		attr.Files = append(attr.Files, sh.SpecR, sh.StatusW)
		attr.Env = shim.Env
		path, argv = shimExe(), []string{shim.Arg0, "exec"}
	}
	pid, waited, err := startProcess(path, argv, attr)
	if err != nil {
		return nil, err
	}
	lp := &localProc{pid: pid, waited: waited, since: since}
	if sh != nil {
		sh.CloseChildEnds()
		if err := sh.Handshake(pl.shimSpec(false)); err != nil {
			<-waited
			return nil, err
		}
	}
	return lp, nil
}

func (lp *localProc) exited() <-chan exitInfo { return lp.waited }

func (lp *localProc) signal(sig unix.Signal) {
	_ = unix.Kill(-lp.pid, sig)
	procMu.Lock()
	defer procMu.Unlock()
	for _, pid := range shim.Descendants(lp.pid) {
		_ = unix.Kill(pid, sig)
	}
	for _, pid := range lp.orphans() {
		_ = unix.Kill(pid, sig)
		for _, d := range shim.Descendants(pid) {
			_ = unix.Kill(d, sig)
		}
	}
}

// orphans are the children of this process that belong to the task: not
// a direct child execx started (those are in live), and started no
// earlier than the task's direct child. Callers hold procMu.
func (lp *localProc) orphans() []int {
	var out []int
	for _, pid := range shim.ChildrenOf(os.Getpid()) {
		if live[pid] {
			continue
		}
		if t, ok := procStartTicks(pid); ok && t >= lp.since {
			out = append(out, pid)
		}
	}
	return out
}

// finish kills what is left of the task after its main process was
// reaped: the process group, then every orphan the runner inherited (and
// their descendants), reaping each, until none is left.
func (lp *localProc) finish() {
	_ = unix.Kill(-lp.pid, unix.SIGKILL)
	deadline := time.Now().Add(reapWait)
	for round := 0; round < 1000 && time.Now().Before(deadline); round++ {
		if !hasChildren() { // the usual case, in one syscall instead of a /proc walk
			return
		}
		procMu.Lock()
		orphans := lp.orphans()
		for _, pid := range orphans {
			for _, d := range shim.Descendants(pid) {
				_ = unix.Kill(d, unix.SIGKILL)
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		procMu.Unlock()
		if len(orphans) == 0 {
			return
		}
		for _, pid := range orphans {
			reapPid(pid, deadline)
		}
	}
}

// reapPid waits for our child pid (already sent SIGKILL) until deadline.
// wait4 on one pid never steals another child's status from os/exec.
func reapPid(pid int, deadline time.Time) {
	for {
		wpid, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
		if wpid == pid || (err != nil && err != unix.EINTR) {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitChild waits for our child pid to end. A supervisor (supervisor) is
// also continued whenever it stops: a task running as the same user can
// SIGSTOP it, which would leave the run waiting for ever for a report.
func waitChild(pid int, supervisor bool) exitInfo {
	if supervisor {
		var stopped atomic.Bool
		return waitPid(pid, &stopped)
	}
	return waitPid(pid, nil)
}

// waitPid waits for our child pid to end; with stopped non-nil it also
// sees the child stop (WUNTRACED), continues it and notes it there.
func waitPid(pid int, stopped *atomic.Bool) exitInfo {
	opts := 0
	if stopped != nil {
		opts = syscall.WUNTRACED
	}
	var ex exitInfo
	for {
		wpid, err := syscall.Wait4(pid, &ex.status, opts, &ex.rusage)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			ex.status = syscall.WaitStatus(0x7f00) // exited 127: cannot happen for our own child
			return ex
		case stopped != nil && wpid == pid && ex.status.Stopped():
			stopped.Store(true)
			_ = unix.Kill(pid, unix.SIGCONT)
			continue
		}
		return ex
	}
}
