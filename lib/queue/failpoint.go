package queue

import (
	"os"
	"syscall"
)

// Failpoints let the crash tests kill a process exactly between two steps
// that random timing rarely separates (a trace synced, its terminal event
// not yet). They exist only in a binary built with `-tags failpoint`
// (failpoint_on.go): there ARTQ_FAILPOINT=NAME[:N] makes the process
// SIGKILL itself the Nth time (default the first) it reaches point NAME.
// Points: after-claim, after-run, after-trace; and torn-write:K, where K is
// a byte count (see TornWrite). In every other build (failpoint_off.go)
// Failpoint and TornWrite do nothing and nothing reads ARTQ_FAILPOINT, so
// no environment variable can make a released artq kill itself.
//
// The kill -9 tests build their artq (or test binary) with the tag; make
// crash builds bin/failpoint/artq.

// FailpointsBuilt reports whether this binary was built with -tags
// failpoint, so a test can tell which kind of build it is.
const FailpointsBuilt = failpointsBuilt

// Crash SIGKILLs the process (for failpoints) and never returns.
func Crash() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; never return
}
