//go:build linux

package execx

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The two ways the runner learns the open-files limit it was started
// with agree: package startnofile's reading before syscall raised it, and
// the ptrace probe that reads it from a child ForkExec gave it back to
// (the route where startnofile has no assembly) — for a runner started
// with a soft limit below the hard one.
func TestNofileRoutesAgree(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 200 {
		t.Skipf("hard limit %d (%v)", lim.Max, err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -Sn 64 && exec "$0" -test.run '^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "EXECX_TEST_NOFILE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(out))
	if got == "64 true 0" {
		t.Skip("ptrace refused here: the probe cannot read the limit")
	}
	if got != "64 true 64" {
		t.Fatalf("startnofile's limit, whether known, the probe's: %q; want %q", got, "64 true 64")
	}
}
