package execx

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// Several supervised tasks at once, as the queue worker runs them: each
// gets its own output and status, and each one's escapee and leftovers are
// killed with it while the others run on.
func TestConcurrentSupervised(t *testing.T) {
	for _, c := range []struct {
		name string
		pool *Pool
	}{{"own", nil}, {"pooled", testPool}} {
		t.Run(c.name, func(t *testing.T) { concurrentSupervised(t, c.pool) })
	}
}

func concurrentSupervised(t *testing.T, pool *Pool) {
	p := policyFor(t, IsolationNone, "sh")
	const n = 6
	var wg sync.WaitGroup
	results := make([]*Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := sh(fmt.Sprintf(`setsid sh -c 'echo $$ > esc%d; exec sleep 1000' </dev/null >/dev/null 2>&1 &
				sleep 1000 >/dev/null 2>&1 & echo $! > bg%d
				while [ ! -s esc%d ]; do sleep 0.01; done
				echo task %d; exit %d`, i, i, i, i, i))
			task.Limits.Timeout = jsonx.Duration(20 * time.Second)
			results[i], errs[i] = Run(context.Background(), p, task, Options{Supervised: true, Pool: pool})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("task %d: %v", i, errs[i])
		}
		if r := results[i]; r.Output != fmt.Sprintf("task %d\n", i) || r.ExitCode != i {
			t.Errorf("task %d: output %q exit %d", i, r.Output, r.ExitCode)
		}
		waitGone(t, readPid(t, filepath.Join(p.Workspace, fmt.Sprintf("esc%d", i))), 2*time.Second)
		waitGone(t, readPid(t, filepath.Join(p.Workspace, fmt.Sprintf("bg%d", i))), 2*time.Second)
	}
}
