// Package oneproc runs its importer's Go code on one P from the start:
// imported (for its side effect) by a one-shot command's main, whose
// process spends its life blocked in system calls and pipes. With a
// second, idle P, the runtime's sysmon thread cannot go to its deep sleep
// and wakes every 20-40 µs for as long as the process lives — about a
// twentieth of a short `artexec run`'s CPU. With one P it sleeps. The
// package has no imports but the runtime, so it is initialised among the
// first, before the heavier packages' own initialisation runs.
package oneproc

import "runtime"

func init() { runtime.GOMAXPROCS(1) }
