package execx

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	_ "github.com/art-runtime/art/lib/execx/netallow" // network allow's tests run the proxy
)

func TestMain(m *testing.M) {
	if IsShim() {
		os.Exit(RunShim())
	}
	if code, ok := helperEntry(); ok {
		os.Exit(code)
	}
	if mode := os.Getenv("EXECX_TEST_RUNNER"); mode != "" {
		os.Exit(testRunner(mode, os.Getenv("EXECX_TEST_WORKSPACE")))
	}
	code := m.Run()
	// The pool the tests share (pooled start modes) must end every
	// supervisor and its forker goroutine on Close.
	testPool.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testPool is the supervisor pool the pooled start modes share, so their
// tasks run on supervisors that ran other tests' tasks before.
var testPool = NewPool(4)

// testRunner is a runner process for tests that must kill the runner
// itself: it runs a task that records its pids in the workspace and
// sleeps, and is expected to be killed by the test.
func testRunner(mode, ws string) int {
	p := &Policy{Allow: []string{"sh"}, Workspace: ws}
	p.Default()
	task := sh(`sleep 1000 & echo $! > gc; echo $$ > pid; wait`)
	if mode == "landlock" {
		// A task that wrote into its private TMPDIR (TestPrivateTmpOutlivesNoKilledRunner).
		p.Isolation, p.Allow = IsolationLandlock, []string{"sh", "sleep"}
		task = sh(`echo left > "$TMPDIR/left" && echo $$ > pid && exec sleep 1000`)
	}
	opt := Options{Supervised: mode != "direct"}
	if mode == "pooled" {
		// Two supervisors end up idle, and the task runs on one of them
		// while the other waits: killing the runner must end all three.
		opt.Pool = NewPool(2)
		done := make(chan struct{})
		for range 2 {
			go func() {
				_, _ = Run(context.Background(), p, sh(`sleep 0.2`), opt)
				done <- struct{}{}
			}()
		}
		<-done
		<-done
	}
	_, err := Run(context.Background(), p, task, opt)
	fmt.Fprintln(os.Stderr, "runner: Run returned:", err)
	return 3
}
