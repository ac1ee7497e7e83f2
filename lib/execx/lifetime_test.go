package execx

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Killing the runner with SIGKILL takes its task with it, grandchild
// included, with or without Options.Supervised: on Linux every task has a
// supervisor, whose own parent-death signal makes it kill the whole task.
// With a Pool, the supervisor running the task and the idle one both end.
// (TestRunnerKilledLeavesNothing does it in every mode and as any user.)
func TestRunnerKilledTakesTaskWithIt(t *testing.T) {
	for _, mode := range []string{"direct", "supervised", "pooled"} {
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			runner := exec.Command(os.Args[0], "-test.run=^$")
			runner.Env = append(os.Environ(), "EXECX_TEST_RUNNER="+mode, "EXECX_TEST_WORKSPACE="+ws)
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			pid := readPid(t, filepath.Join(ws, "pid"))
			gc := readPid(t, filepath.Join(ws, "gc"))
			if !running(pid) || !running(gc) {
				t.Fatalf("task not running before the runner is killed")
			}
			sups := serveSupervisors(runner.Process.Pid)
			if want := map[string]int{"pooled": 2}[mode]; runtime.GOOS == "linux" && len(sups) != want {
				t.Fatalf("the runner has %d pooled supervisors (%v); want %d", len(sups), sups, want)
			}
			if err := runner.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = runner.Wait()
			waitGone(t, pid, 2*time.Second)
			waitGone(t, gc, 2*time.Second)
			for _, s := range sups {
				waitGone(t, s, 2*time.Second)
			}
		})
	}
}
