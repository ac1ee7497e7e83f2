package execx

import "github.com/art-runtime/art/lib/execx/shim"

// IsShim reports whether this process is a shim started by execx. Every
// main (and TestMain) of a binary that runs tasks through execx begins with
//
//	if execx.IsShim() { os.Exit(execx.RunShim()) }
//
// because Go cannot run code between fork and execve: the per-task
// supervisor and the exec stage (package stage), which applies every
// restriction to the task's own process, are a Go process of their own —
// the minimal binary artexec-shim when it is installed beside the running
// binary (see shimExe), else this binary re-executed.
func IsShim() bool { return shim.Is() }

// RunShim runs the shim (package shim) and returns its exit status.
func RunShim() int { return shim.Main() }
