package systest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PidsWithArg returns the pids of processes, other than this one, that have
// arg as one whole argument, read from /proc (Linux; elsewhere it finds
// none). Tests give the processes they start a unique marker argument and
// use this to prove that none of them survived a cancel or a kill.
func PidsWithArg(arg string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		for _, a := range bytes.Split(cmd, []byte{0}) {
			if string(a) == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// WaitPids waits up to within until at least n processes have arg as one
// whole argument, and fails the test otherwise: the start of a tree whose
// death a test will then check.
func WaitPids(t testing.TB, arg string, n int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids, _ := PidsWithArg(arg); len(pids) >= n {
			return
		}
	}
	t.Fatalf("the tool's %d processes never started", n)
}

// NoSurvivor waits up to within until no process has arg as one whole
// argument, and fails naming the survivors otherwise.
func NoSurvivor(t testing.TB, arg string, within time.Duration) {
	t.Helper()
	var pids []int
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids, _ = PidsWithArg(arg); len(pids) == 0 {
			return
		}
	}
	t.Fatalf("processes survived: %v", pids)
}
