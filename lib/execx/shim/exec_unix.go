//go:build linux || darwin

package shim

import (
	"encoding/json"
	"os"
	"runtime"

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
