package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// countingHooks records what the worker tells its hooks, and gives each
// run an id the way an observer would.
type countingHooks struct {
	mu    sync.Mutex
	runs  []string // task/step/attempt/workspace mode, in order
	done  []string
	after map[string]bool // step → its runner returned
}

func (h *countingHooks) Runner(r *worker.Run, next execx.RunFunc) execx.RunFunc {
	return func(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error) {
		h.mu.Lock()
		h.runs = append(h.runs, t.ID+"/"+r.Step+"/"+strconv.Itoa(r.Attempt)+"/"+string(r.Workspace.Mode))
		h.mu.Unlock()
		if r.Task != t || r.Policy != p {
			panic("Runner's Run does not describe the run it wraps")
		}
		t.Env.Set[worker.EnvCausation] = "cause-" + r.Step
		res, err := next(ctx, p, t, opt)
		h.mu.Lock()
		h.after[r.Step] = res != nil && err == nil
		h.mu.Unlock()
		return res, err
	}
}

func (h *countingHooks) AttemptDone(task string) {
	h.mu.Lock()
	h.done = append(h.done, task)
	h.mu.Unlock()
}

// TestHooks: the worker wraps the command and then the acceptance in the
// hooks' runner (each described: task, step, attempt, workspace), a value
// the hooks put in ART_CAUSATION reaches the command, and every attempt
// ends with one AttemptDone.
func TestHooks(t *testing.T) {
	e := newEnv(t)
	out := t.TempDir()
	spec := &queue.RunSpec{Workspace: queue.WorkspaceCopy, Acceptance: []string{"sh", "-c", `echo "$ART_CAUSATION"`}}
	e.enqueueRun(t, "job", spec, "sh", "-c", `echo "$ART_CAUSATION"`)
	h := &countingHooks{after: map[string]bool{}}
	st := e.drain(t, worker.Config{Hooks: h, OutputDir: out})
	if st.Succeeded != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got, want := strings.Join(h.runs, " "), "job/command/1/copy job/acceptance/1/copy"; got != want {
		t.Errorf("runs %q; want %q", got, want)
	}
	if !h.after["command"] || !h.after["acceptance"] {
		t.Errorf("runners returned %v", h.after)
	}
	if strings.Join(h.done, " ") != "job" {
		t.Errorf("AttemptDone %v", h.done)
	}
	for name, want := range map[string]string{"job.1.out": "cause-command\n", "job.1.acceptance.out": "cause-acceptance\n"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}
