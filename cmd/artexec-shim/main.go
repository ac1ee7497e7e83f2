// Command artexec-shim is the per-task supervisor of artexec, artq and
// artagent, as a binary of its own: it links package shim and nothing of
// the tools, so each task pays for the start of a small Go program
// instead of the tool's whole binary (the supervisor forks the task's own
// process, which restricts itself without a Go runtime of its own). The tools use it only from the directory of their
// own executable, and only when neither it nor that directory can be
// written by anyone but root or the tool's user; without it they
// re-execute themselves. It is not a command: started by hand it says so
// and exits 2.
package main

import (
	"os"

	"github.com/art-runtime/art/lib/execx/shim"
)

func main() { os.Exit(shim.Main()) }
