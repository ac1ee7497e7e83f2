package execx

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if IsShim() {
		os.Exit(RunShim())
	}
	if code, ok := attackEntry(); ok {
		os.Exit(code)
	}
	if mode := os.Getenv("EXECX_TEST_RUNNER"); mode != "" {
		os.Exit(testRunner(mode, os.Getenv("EXECX_TEST_WORKSPACE")))
	}
	goleak.VerifyTestMain(m)
}

// testRunner is a runner process for tests that must kill the runner
// itself: it runs a task that records its pids in the workspace and
// sleeps, and is expected to be killed by the test.
func testRunner(mode, ws string) int {
	p := &Policy{Allow: []string{"sh"}, Workspace: ws}
	p.Default()
	task := sh(`sleep 1000 & echo $! > gc; echo $$ > pid; wait`)
	_, err := Run(context.Background(), p, task, Options{Supervised: mode == "supervised"})
	fmt.Fprintln(os.Stderr, "runner: Run returned:", err)
	return 3
}
