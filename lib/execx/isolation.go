package execx

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// isoPlan is what will be enforced on one run, decided before start.
// enforced lists exactly what is applied; a feature that turns out to be
// unavailable at start either fails the run (125) or, in best effort, is
// dropped from enforced before the Result is written.
type isoPlan struct {
	backend    Isolation
	bestEffort bool
	supervise  bool // a shim stays alive as the task's supervisor
	landlock   int  // Landlock ABI to enforce; 0 = none
	namespaces bool // new user, PID and network namespaces
	nnp        bool // no_new_privs
	//lint:ignore U1000 set and read on darwin
	seatbelt bool
	rlimits  []rlimitSpec
	tmpdir   string // private writable temp dir (landlock, strict, seatbelt)
	enforced []string
}

// needsShim reports whether anything must be applied in the child between
// fork and execve that the runner cannot apply to the forking thread
// instead, which Go can only do by re-executing itself: rlimits, which are
// per process. Landlock and no_new_privs are per thread, so the runner
// applies them to the thread that forks the child (see startProcess).
func (ip *isoPlan) needsShim() bool {
	return ip.supervise || len(ip.rlimits) > 0
}

// rlimitSpec is one resource limit, applied as both soft and hard limit so
// the child cannot raise it again.
type rlimitSpec struct {
	Name     string `json:"name"`
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// rlimitsOf turns the non-zero rlimit fields of l into specs. RLIMIT_NPROC
// counts every process of the real user, not of the task, and the kernel
// does not apply it to root at all: it is listed as enforced only when the
// runner is not root.
func rlimitsOf(l *Limits) (specs []rlimitSpec, enforced []string) {
	add := func(name string, res int, v int64) {
		if v <= 0 {
			return
		}
		specs = append(specs, rlimitSpec{Name: name, Resource: res, Value: uint64(v)})
		if res == unix.RLIMIT_NPROC && os.Geteuid() == 0 {
			return
		}
		enforced = append(enforced, "rlimit."+name)
	}
	add("cpu", unix.RLIMIT_CPU, l.CPUSeconds)
	add("nproc", unix.RLIMIT_NPROC, l.Processes)
	add("fsize", unix.RLIMIT_FSIZE, l.FileBytes)
	add("nofile", unix.RLIMIT_NOFILE, l.OpenFiles)
	add("as", unix.RLIMIT_AS, l.MemoryBytes) // last: the shim must not need memory after it
	return specs, enforced
}

// unavailable is the refusal for an isolation feature this machine cannot
// enforce when best effort was not allowed.
func unavailable(what string, why error) error {
	return fmt.Errorf("isolation %s: %v: %w (use --isolation-best-effort to run with what is available)", what, why, ErrIsolationUnavailable)
}

func makeTmpdir() (string, error) {
	d, err := os.MkdirTemp("", "artexec-")
	if err != nil {
		return "", exitcode.Errorf(exitcode.Internal, "private temp dir: %w", err)
	}
	return d, nil
}
