//go:build linux

package shim

import (
	"errors"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// execStage: on Linux the exec stage is no process of its own (see
// startRestricted); a runner never asks for one.
func execStage() int { return exitcode.Internal }

// startRestricted starts the program of s as a child of this supervisor
// that restricts itself between fork and execve (stage.Child), with the
// task's stdin, output and stderr as its 0-2, in the task's cgroup. With
// Spec.StageView the child first builds that view in a mount namespace
// of its own (stage.Child.InView): the supervisor, whose every thread
// stays in the runner's namespace, forks it from whichever of them runs
// its goroutine, like any other task. On error nothing of the program ran; a failed execve
// is a start error (127, 126), any other step an internal isolation
// error.
func startRestricted(s *Spec, fds *taskFDs) (int, error) {
	st := s.Stage
	if st.Landlock > 0 {
		st.RWFDs = fds.rw
	}
	c, err := stage.NewChild(&st, [3]int{fds.stdin, fds.out, fds.err}, fds.cgroup)
	if err != nil {
		return 0, stageError(s, err)
	}
	defer c.Close()
	if s.StageView != nil {
		if err := c.InView(s.StageView, fds.rw); err != nil {
			return 0, stageError(s, err)
		}
	}
	pid, err := c.Start()
	if err != nil {
		return 0, stageError(s, err)
	}
	return pid, nil
}

func stageError(s *Spec, err error) error {
	var se *stage.Error
	if errors.As(err, &se) && se.Step == "exec" {
		return StartError(s.Stage.Path, se.Err)
	}
	return exitcode.Errorf(exitcode.Internal, "isolation: %w", err)
}
