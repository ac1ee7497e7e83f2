//go:build darwin

package execx

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

var (
	exeOnce sync.Once
	exePath string
)

// selfExe is the running binary, for re-executing it as the shim.
func selfExe() string {
	exeOnce.Do(func() {
		exePath, _ = os.Executable()
	})
	return exePath
}

// shimExe: on macOS the shim (rlimits only) is always this binary.
func shimExe() string { return selfExe() }

// childAttr: a new session (and process group). macOS has no parent-death signal and no
// child subreaper: a runner killed with SIGKILL leaves its child running,
// and a descendant that leaves the process group is not found.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// dirOf is the working directory by path: macOS has no /proc/self/fd to
// change into the opened directory through, so the child is given the
// checked path, which a symlink swapped in afterwards can race.
func dirOf(pl *plan) string { return pl.dirPath }

// fdPath: fsx opened the file by its checked real path on macOS.
func fdPath(f *os.File) (string, error) { return filepath.EvalSymlinks(f.Name()) }

func growPipe(*os.File) {}

func ensureSubreaper() error { return nil }

func hasChildren() bool { return false }

func procStartTicks(int) (uint64, bool) { return 0, false }

func bootTicks() uint64 { return 0 }

// startSupervised: without a subreaper there is nothing a supervisor
// could add on macOS; the task runs as a direct child.
func startSupervised(pl *plan, stdin, out, errw *os.File) (proc, error) {
	return startLocal(pl, stdin, out, errw)
}

func maxRSSKB(ru *syscall.Rusage) int64 { return ru.Maxrss / 1024 } // macOS reports bytes

// markNonDumpable: macOS has no such flag; nothing to do.
func markNonDumpable() {}

// childPipe is os.Pipe here: Fd() makes the child's end blocking.
func childPipe(int, bool) (r, w *os.File, err error) { return os.Pipe() }
