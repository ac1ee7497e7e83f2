package systest

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// SelfWithSoftNofile runs this test binary again with a soft open-files
// limit of soft (below the hard one, so that Go raises it at start),
// running the tests run matches (`^$`: none, for a TestMain that acts on
// env), with env added, and returns what it printed. It skips where the
// hard limit leaves no room below it.
func SelfWithSoftNofile(t *testing.T, soft int, run string, env ...string) []byte {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < uint64(soft)+100 {
		t.Skipf("hard open-files limit %d (%v)", lim.Max, err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -Sn "$1" && exec "$0" -test.run "$2"`, os.Args[0], strconv.Itoa(soft), run)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("this test binary under ulimit -Sn %d: %v", soft, err)
	}
	return out
}
