//go:build linux

package execx

import (
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// The two ways the runner learns the open-files limit it was started
// with agree: package startnofile's reading before syscall raised it, and
// the ptrace probe that reads it from a child ForkExec gave it back to
// (the route where startnofile has no assembly) — for a runner started
// with a soft limit below the hard one.
func TestNofileRoutesAgree(t *testing.T) {
	got := strings.TrimSpace(string(systest.SelfWithSoftNofile(t, 64, "^$", "EXECX_TEST_NOFILE=1")))
	if got == "64 true 0" {
		t.Skip("ptrace refused here: the probe cannot read the limit")
	}
	if got != "64 true 64" {
		t.Fatalf("startnofile's limit, whether known, the probe's: %q; want %q", got, "64 true 64")
	}
}
