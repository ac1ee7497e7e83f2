//go:build linux || darwin

package shim

import (
	"encoding/json"
	"errors"
	"os"
	"runtime"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

func run(mode string) int {
	switch mode {
	case "exec":
		return execStage()
	case "supervise":
		oneProc()
		return supervise()
	case "serve":
		oneProc()
		return serve()
	case "probe":
		return 0
	}
	return exitcode.Internal
}

// oneProc runs a supervisor's Go code on one P. A supervisor does one
// thing at a time on its locked thread and spends the task blocked in a
// syscall (poll, wait4, read); with a second, idle P the runtime leaves
// the blocked P alone for up to 10 ms and its sysmon thread keeps waking
// every 20-40 µs the whole time (about fifty wake-ups per task), while
// with one P it takes the P back after one tick and sysmon sleeps until
// the syscall returns.
func oneProc() { runtime.GOMAXPROCS(1) }

// report writes one line to the runner on the status pipe (fd 4).
func report(f *os.File, m Msg) {
	b, _ := json.Marshal(m)
	_, _ = f.Write(append(b, '\n'))
}

func reportErr(f *os.File, err error) int {
	code := exitcode.Of(err)
	report(f, Msg{Event: "error", Code: code, Msg: err.Error()})
	return code
}

// execStage is the exec stage: it applies the restrictions to itself and
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
