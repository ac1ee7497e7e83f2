//go:build linux

// An external test package: the package's own test files would import
// syscall into it, and so initialise syscall first.
package startnofile_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx/internal/startnofile"
)

// The limit the package read is the one the process started with, not
// the one package syscall raised it to: a child of this test started
// with a low soft limit reports what it read, and its own limit now.
func TestBeforeSyscall(t *testing.T) {
	if os.Getenv("STARTNOFILE_CHILD") != "" {
		s, h, ok := startnofile.Limit()
		var now syscall.Rlimit
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now)
		fmt.Printf("%d %d %v %d\n", s, h, ok, now.Cur)
		os.Exit(0)
	}
	out := systest.SelfWithSoftNofile(t, 64, "^TestBeforeSyscall$", "STARTNOFILE_CHILD=1")
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("64 %d true %d", lim.Max, lim.Max-1)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("the child read %q; want soft, hard, ok and its raised limit now: %q", got, want)
	}
}
