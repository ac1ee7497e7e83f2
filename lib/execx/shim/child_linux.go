//go:build linux

package shim

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// execStage: on Linux the exec stage is no process of its own (see
// startRestricted); a runner never asks for one.
func execStage() int { return exitcode.Internal }

// startRestricted starts the program of s as a child of this supervisor
// that restricts itself between fork and execve (stage.Child), with the
// task's stdin, output and stderr as its 0-2, in the task's cgroup. With
// Spec.StageView the child is forked from a thread of its own in a mount
// namespace of its own (see startInView). On error nothing of the program
// ran; a failed execve is a start error (127, 126), any other step an
// internal isolation error.
func startRestricted(s *Spec, fds *taskFDs) (int, *viewThread, error) {
	st := s.Stage
	if st.Landlock > 0 {
		st.RWFDs = fds.rw
	}
	c, err := stage.NewChild(&st, [3]int{fds.stdin, fds.out, fds.err}, fds.cgroup)
	if err != nil {
		return 0, nil, stageError(s, err)
	}
	defer c.Close()
	if s.StageView == nil {
		pid, err := c.Start()
		if err != nil {
			return 0, nil, stageError(s, err)
		}
		return pid, nil, nil
	}
	pid, view, err := startInView(s.StageView, c, fds.rw)
	if err != nil {
		return 0, nil, stageError(s, err)
	}
	return pid, view, nil
}

func stageError(s *Spec, err error) error {
	var se *stage.Error
	if errors.As(err, &se) && se.Step == "exec" {
		return StartError(s.Stage.Path, se.Err)
	}
	return exitcode.Errorf(exitcode.Internal, "isolation: %w", err)
}

// viewThread is the thread a program was forked from in a mount view of
// its own: a pooled supervisor's landlock task as root.
type viewThread struct {
	tid    int
	reaped chan struct{} // closed once the program is reaped
	once   sync.Once
}

// startInView builds v on a new thread and forks c from it. The thread
// is locked to its goroutine, leaves the supervisor's mount namespace and
// filesystem context (unshare CLONE_NEWNS|CLONE_FS: that thread only,
// no restriction of any thread — a private mount namespace limits
// nobody), builds the view from the writable trees rw (stage.View.Setup)
// and forks the program there, so the program starts in the view. The
// thread then waits until the program is reaped — its parent-death
// signal is tied to the thread that forked it — and ends with its
// goroutine still locked, so the runtime ends the thread instead of
// reusing it: no goroutine ever runs again in that namespace, and new
// threads the runtime makes meanwhile come from its template thread, not
// from this one. The supervisor's own goroutine holds the main thread
// (it is locked to it), so the thread that ends is never the main one.
func startInView(v *stage.View, c *stage.Child, rw []int) (int, *viewThread, error) {
	vt := &viewThread{reaped: make(chan struct{})}
	type started struct {
		tid, pid int
		err      error
	}
	sc := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		tid := unix.Gettid()
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			sc <- started{tid: tid, err: &stage.Error{Step: "mount view", Err: err}}
			return
		}
		if err := v.Setup(rw); err != nil {
			sc <- started{tid: tid, err: &stage.Error{Step: "mount view", Err: err}}
			return
		}
		pid, err := c.Start()
		sc <- started{tid, pid, err}
		if err == nil {
			<-vt.reaped
		}
	}()
	r := <-sc
	vt.tid = r.tid
	if r.err != nil {
		vt.gone()
		return 0, nil, r.err
	}
	return r.pid, vt, nil
}

// release lets the view thread end: the program it forked is reaped.
// A nil thread has nothing to do.
func (vt *viewThread) release() {
	if vt != nil {
		vt.once.Do(func() { close(vt.reaped) })
	}
}

// gone releases the thread and waits (bounded) until it no longer
// exists, so that what a serving supervisor checks of its threads after
// a task (procState) is the threads it keeps. A thread that outlives the
// bound is left to the check, which then fails safe (the supervisor does
// not serve again).
func (vt *viewThread) gone() {
	if vt == nil {
		return
	}
	vt.release()
	pid := unix.Getpid()
	for wait := time.Microsecond; wait < time.Second; wait *= 2 {
		if unix.Tgkill(pid, vt.tid, 0) == unix.ESRCH {
			return
		}
		time.Sleep(wait)
	}
}
