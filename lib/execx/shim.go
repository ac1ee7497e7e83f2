package execx

import "github.com/art-runtime/art/lib/execx/shim"

// IsShim reports whether this process is a shim started by execx. Every
// main (and TestMain) of a binary that runs tasks through execx begins with
//
//	if execx.IsShim() { os.Exit(execx.RunShim()) }
//
// because the per-task supervisor, which forks the task's own process
// so that it applies every restriction to itself (package stage), is a
// Go process of its own —
// the minimal binary artexec-shim when it is installed beside the running
// binary (see shimExe), else this binary re-executed.
func IsShim() bool { return shim.Is() }

// RunShim runs the shim (package shim) and returns its exit status.
func RunShim() int { return shim.Main() }
