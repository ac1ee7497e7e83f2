//go:build linux || darwin

package execx

import (
	"encoding/json"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

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

// applyRlimits sets each limit as soft and hard limit (CPU gets one more
// hard second so the program sees SIGXCPU before SIGKILL). A value above
// the current hard limit is clamped to it: the child is bounded either way
// and raising it needs privilege. syscall.Setrlimit (not x/sys) is used so
// the Go runtime does not restore its own NOFILE limit at exec.
func applyRlimits(rls []rlimitSpec) error {
	for _, r := range rls {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.Resource, &cur); err != nil {
			return exitcode.Errorf(exitcode.Internal, "rlimit %s: %w", r.Name, err)
		}
		lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
		if r.Resource == unix.RLIMIT_CPU {
			lim.Max++
		}
		if cur.Max != unix.RLIM_INFINITY {
			lim.Cur, lim.Max = min(lim.Cur, cur.Max), min(lim.Max, cur.Max)
		}
		if err := syscall.Setrlimit(r.Resource, &lim); err != nil {
			return exitcode.Errorf(exitcode.Internal, "rlimit %s: %w", r.Name, err)
		}
	}
	return nil
}

// shimExec applies the restrictions and becomes the program. The status
// pipe is close-on-exec: the runner reads EOF when execve succeeded, a
// report when it did not.
func shimExec() int {
	runtime.LockOSThread() // never unlocked: the restricted thread execs
	status := os.NewFile(4, "status")
	// The status pipe, and anything else above 2 the runner let through,
	// must not reach the program: only 0-2 survive the exec.
	markCloexecFrom(3)
	s, err := readSpec()
	if err != nil {
		return reportErr(status, exitcode.Wrap(exitcode.Internal, err))
	}
	if err := applyRestrictions(s); err != nil {
		return reportErr(status, err)
	}
	err = syscall.Exec(s.Path, s.Argv, s.Env)
	return reportErr(status, startError(s.Path, err))
}
