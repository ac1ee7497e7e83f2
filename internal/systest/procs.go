package systest

import (
	"bytes"
	"fmt"
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

// atLeastWithArg is nil when at least n processes have arg as an argument.
func atLeastWithArg(arg string, n int) error {
	pids, err := PidsWithArg(arg)
	if err != nil {
		return err
	}
	if len(pids) < n {
		return fmt.Errorf("%d processes with argument %s; want at least %d", len(pids), arg, n)
	}
	return nil
}

// noneWithArg is nil when no process has arg as an argument.
func noneWithArg(arg string) error {
	pids, err := PidsWithArg(arg)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return fmt.Errorf("processes with argument %s survived: %v", arg, pids)
	}
	return nil
}

// waitUntil calls cond every 10 ms until it returns nil or within has
// passed, and returns its last error.
func waitUntil(within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitPids waits up to within until at least n processes have arg as one
// whole argument, and fails the test otherwise: the start of a tree whose
// death a test will then check.
func WaitPids(t testing.TB, arg string, n int, within time.Duration) {
	t.Helper()
	if err := waitUntil(within, func() error { return atLeastWithArg(arg, n) }); err != nil {
		t.Fatalf("the tool's processes never started: %v", err)
	}
}

// NoSurvivor waits up to within until no process has arg as one whole
// argument, and fails naming the survivors otherwise.
func NoSurvivor(t testing.TB, arg string, within time.Duration) {
	t.Helper()
	if err := waitUntil(within, func() error { return noneWithArg(arg) }); err != nil {
		t.Fatal(err)
	}
}
