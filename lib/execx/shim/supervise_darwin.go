//go:build darwin

package shim

import (
	"errors"
	"os"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// supervise: macOS has no child subreaper and no parent-death signal, so
// execx starts no supervisor there.
func supervise() int { return exitcode.Internal }

// serve: see supervise.
func serve(string) int { return exitcode.Internal }

// stageView: macOS has no mount namespaces; the runner never asks for one.
func stageView(s *Spec) error {
	if s.View != nil {
		return errors.New("no mount namespaces on this system")
	}
	return nil
}

// execStage is the exec stage on macOS, a process of its own (there is no
// supervisor to fork the task): it applies the rlimits to itself and
// becomes the program. The status
// pipe is close-on-exec: the runner reads EOF when execve succeeded, a
// report when it did not.
func execStage() int {
	status := os.NewFile(4, "status")
	// The status pipe, and anything else above 2 the runner let through,
	// must not reach the program: only 0-2 survive the exec.
	MarkCloexecFrom(3)
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	if err := stageView(s); err != nil {
		return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: mount view: %w", err))
	}
	err = stage.Exec(&s.Stage)
	var se *stage.Error
	if errors.As(err, &se) && se.Step == "exec" {
		return reportErr(status, StartError(s.Stage.Path, se.Err))
	}
	return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: %w", err))
}
