package queue

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Failpoints let the crash tests kill a worker exactly between two steps
// that random timing rarely separates (a trace synced, its terminal event
// not yet). ARTQ_FAILPOINT=NAME[:N] makes the process SIGKILL itself the
// Nth time (default the first) it reaches point NAME. Unset, a failpoint
// costs one comparison. Points: after-claim, after-run, after-trace.
var (
	failName string
	failN    int64
	failHits atomic.Int64
)

func init() {
	spec := os.Getenv("ARTQ_FAILPOINT")
	if spec == "" {
		return
	}
	name, count, _ := strings.Cut(spec, ":")
	failName, failN = name, 1
	if n, err := strconv.ParseInt(count, 10, 64); err == nil && n > 0 {
		failN = n
	}
}

func failpoint(name string) {
	if failName != name {
		return
	}
	if failHits.Add(1) == failN {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never return
	}
}
