//go:build linux

package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// envFakeAgent makes this test binary, started as a task, behave like an
// agent: it runs a tool through its own supervised runner (a second
// supervisor under the worker's) and waits for it.
const envFakeAgent = "ARTQ_TEST_FAKE_AGENT"

func init() {
	if execx.IsShim() || os.Getenv(envFakeAgent) == "" {
		return
	}
	os.Exit(fakeAgent(os.Getenv(envFakeAgent)))
}

// fakeAgent runs a tool that leaves the process group (setsid) and one
// that stays, both sleeping with the marker in their command line.
func fakeAgent(marker string) int {
	ws, _ := os.Getwd()
	pol := &execx.Policy{Allow: []string{"sh"}, Workspace: ws}
	pol.Default()
	tool := &execx.Task{Program: "sh", Args: []string{"-c", fmt.Sprintf("setsid sleep %s & sleep %s & wait", marker, marker)}}
	res, err := execx.Run(bg, pol, tool, execx.Options{Supervised: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		return 1
	}
	fmt.Println("tool ended:", res.Status)
	return 0
}

// procsWith returns the pids of processes whose command line holds marker
// as a whole argument.
func procsWith(t *testing.T, marker string) []int {
	t.Helper()
	pids, err := systest.PidsWithArg(marker)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// TestWorkCancelKillsEveryProcess: cancelling a task kills the agent and
// the tool it is running under its own supervisor, a setsid escapee
// included: when the task is recorded cancelled, no process of it is left.
func TestWorkCancelKillsEveryProcess(t *testing.T) {
	e := newEnv(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("%d.%d", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	pol := &execx.Policy{
		Allow: []string{filepath.Base(exe), "sh"}, Workspace: e.ws,
		Path:     []string{filepath.Dir(exe), "/usr/bin", "/bin"},
		EnvAllow: append(append([]string{}, execx.DefaultEnvAllow...), envFakeAgent),
	}
	pol.Default()
	task, err := queue.ArgvTask([]string{filepath.Base(exe), "-test.run=^$", marker})
	if err != nil {
		t.Fatal(err)
	}
	task.Env.Set = map[string]string{envFakeAgent: marker}
	if _, err := e.q.Enqueue(bg, []queue.EnqueueRequest{{ID: "agent", Task: task, MaxAttempts: 2, Run: &queue.RunSpec{Workspace: queue.WorkspaceCopy}}}); err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	stop := serve(t, e, worker.Config{})
	deadline := time.Now().Add(30 * time.Second)
	// Three: the agent (the marker is its argument) and both sleeps.
	for len(procsWith(t, marker)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent and its tools did not start: %v", procsWith(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := queue.New(e.b).Cancel(bg, "agent"); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, "agent", queue.StateCancelled)
	if left := procsWith(t, marker); len(left) > 0 {
		t.Errorf("processes of the cancelled task survive: %v", left)
	}
	if ts := e.status(t, "agent"); ts.Last.Status != execx.StatusCancelled || ts.Attempts != 1 {
		t.Errorf("status = %+v; want cancelled on attempt 1", ts)
	}
	// The cancelled attempt's workspace is kept for inspection.
	if !exists(worker.TreePath(e.work(), "agent", 1)) {
		t.Error("the cancelled task's workspace was removed")
	}
	if _, err := stop(fmt.Errorf("done")); err == nil || !strings.Contains(err.Error(), "done") {
		t.Errorf("stop = %v", err)
	}
}
