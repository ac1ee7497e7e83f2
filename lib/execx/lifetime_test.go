package execx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Killing the runner with SIGKILL takes its task with it: the direct
// child through Pdeathsig; under a supervisor, the supervisor's own
// parent-death signal makes it kill the whole task, grandchild included.
func TestRunnerKilledTakesTaskWithIt(t *testing.T) {
	for _, mode := range []string{"direct", "supervised"} {
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
			if err := runner.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = runner.Wait()
			waitGone(t, pid, 2*time.Second)
			if mode == "supervised" {
				waitGone(t, gc, 2*time.Second)
			} else if running(gc) {
				// Pdeathsig reaches the direct child only; the grandchild,
				// reparented away from the dead runner, is out of reach.
				t.Logf("direct mode: grandchild %d outlives a SIGKILLed runner (documented)", gc)
				_ = unix.Kill(gc, unix.SIGKILL)
				waitGone(t, gc, 2*time.Second)
			}
		})
	}
}
