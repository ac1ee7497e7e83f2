//go:build linux || darwin

package execx

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

func runShim(mode string) int {
	switch mode {
	case "exec":
		return shimExec()
	case "supervise":
		return shimSupervise()
	case "probe":
		return 0
	}
	return exitcode.Internal
}

// report writes one line to the runner on the status pipe (fd 4).
func report(f *os.File, m shimMsg) {
	b, _ := json.Marshal(m)
	_, _ = f.Write(append(b, '\n'))
}

func reportErr(f *os.File, err error) int {
	code := exitcode.Of(err)
	report(f, shimMsg{Event: "error", Code: code, Msg: err.Error()})
	return code
}

// shimExec is the exec stage: it applies the restrictions to itself and
// becomes the program. The status
// pipe is close-on-exec: the runner reads EOF when execve succeeded, a
// report when it did not.
func shimExec() int {
	status := os.NewFile(4, "status")
	// The status pipe, and anything else above 2 the runner let through,
	// must not reach the program: only 0-2 survive the exec.
	markCloexecFrom(3)
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	err = stage.Exec(&s.Stage)
	var se *stage.Error
	if errors.As(err, &se) && se.Step == "exec" {
		return reportErr(status, startError(s.Stage.Path, se.Err))
	}
	return reportErr(status, exitcode.Errorf(exitcode.Internal, "isolation: %w", err))
}
