//go:build failpoint

package queue

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// The armed failpoint, read once from ARTQ_FAILPOINT (see failpoint.go).
// Unset, a failpoint costs one comparison.
var (
	failName string
	failN    int64
	failHits atomic.Int64
)

const failpointsBuilt = true

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

// Failpoint kills the process when ARTQ_FAILPOINT names point name
// (the worker's steps: after-claim, after-run; the queue's after-trace).
func Failpoint(name string) {
	if failName != name {
		return
	}
	if failHits.Add(1) == failN {
		Crash()
	}
}

// TornWrite reports K when ARTQ_FAILPOINT=torn-write:K: a backend about to
// write more than K bytes at once writes only the first K and calls Crash,
// which is what a kill -9 in the middle of a large write(2) leaves.
func TornWrite() (int64, bool) {
	if failName != "torn-write" {
		return 0, false
	}
	return failN, true
}
