package queueobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/queueobs"
	"github.com/art-runtime/art/lib/queue/worker"
)

var t0s = time.Date(2026, 11, 30, 3, 56, 19, 0, time.UTC)

const fakeToken = "ghp_" + "R2d2C3poBb8Luke0Leia1Han2Solo3Chewie4"

func attrs(t *testing.T, env *obs.Envelope) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(env.Attrs(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var bg = context.Background()

// env is a file-backed queue and a worker policy over a fresh workspace.
type env struct {
	b   *file.Backend
	pol *execx.Policy
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := file.Open(filepath.Join(root, "q"), file.Options{WatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"sh", "sleep"}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return &env{b: b, pol: pol}
}

// TestObserverChain: every event of a task's run is emitted with the
// task's subject and correlation, the attempt in its attrs, and the event
// before it as its causation (in one process; a worker's chain starts at
// its claim when another process enqueued): enqueued, claimed → task.started → task.finished → the
// acceptance's task.started → task.finished → traced → succeeded. The
// command learns its correlation and the id of its task.started.
func TestObserverChain(t *testing.T) {
	e := newEnv(t)
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	o := queueobs.NewObserver(em, "builds", obs.RoleWorker)
	q := queue.New(o.Backend(e.b))
	task, _ := queue.ArgvTask([]string{"sh", "-c", `echo "$ART_CORRELATION $ART_CAUSATION"`})
	task.Env.Set = map[string]string{"GH_TOKEN": fakeToken}
	spec := &queue.RunSpec{Workspace: queue.WorkspaceCopy, Acceptance: []string{"sh", "-c", "echo accepted " + fakeToken}}
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "job", Task: task, MaxAttempts: 1, Run: spec}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	pol := *e.pol
	pol.EnvAllow = append(pol.EnvAllow, "GH_TOKEN")
	if _, err := worker.Work(bg, q, worker.Config{Policy: &pol, Mode: worker.Drain, Hooks: o, Queue: "builds", OutputDir: out}); err != nil {
		t.Fatal(err)
	}
	envs := mem.Envelopes()
	var types []string
	for _, env := range envs {
		types = append(types, env.Type())
	}
	want := "queue.enqueued queue.claimed task.started task.finished task.started task.finished queue.traced queue.succeeded"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events = %s\nwant     %s", got, want)
	}
	const corr = "queue/builds/task/job"
	for i, env := range envs {
		if env.Subject() != corr || env.Correlation() != corr {
			t.Errorf("%s: subject %q correlation %q; want %q", env.Type(), env.Subject(), env.Correlation(), corr)
		}
		if uint64(i+1) != env.Seq() {
			t.Errorf("%s: seq %d; want %d", env.Type(), env.Seq(), i+1)
		}
		a := attrs(t, env)
		switch {
		case i == 0:
			if env.Causation() != "" || env.Role() != obs.RoleWorker {
				t.Errorf("enqueued: causation %q role %s", env.Causation(), env.Role())
			}
			run, _ := a["run"].(map[string]any)
			if a["program"] != "sh" || a["argc"] != 3.0 || run["workspace"] != "copy" || run["acceptance_program"] != "sh" {
				t.Errorf("enqueued attrs = %v", a)
			}
		default:
			if env.Causation() != envs[i-1].ID() {
				t.Errorf("%s (#%d): causation %q; want the event before it, %s", env.Type(), i, env.Causation(), envs[i-1].ID())
			}
		}
		if i > 0 && a["attempt"] != 1.0 {
			t.Errorf("%s: attempt %v; want 1", env.Type(), a["attempt"])
		}
		if strings.Contains(string(env.Attrs()), fakeToken) {
			t.Errorf("%s carries the task's secret: %s", env.Type(), env.Attrs())
		}
	}
	if a := attrs(t, envs[2]); a["step"] != "command" || a["workspace"].(map[string]any)["mode"] != "copy" {
		t.Errorf("task.started attrs = %v", a)
	}
	if a := attrs(t, envs[4]); a["step"] != "acceptance" || a["program"] != "sh" {
		t.Errorf("acceptance task.started attrs = %v", a)
	}
	tr := attrs(t, envs[6])["trace"].(map[string]any)
	if tr["status"] != "succeeded" || tr["acceptance"].(map[string]any)["status"] != "succeeded" {
		t.Errorf("traced attrs = %v", tr)
	}
	if got, want := readFile(t, filepath.Join(out, "job.1.out")), corr+" "+envs[2].ID()+"\n"; got != want {
		t.Errorf("the command saw %q; want its correlation and its task.started id %q", got, want)
	}
}

// failingSink fails every append.
type failingSink struct{}

func (failingSink) Name() string { return "broken" }
func (failingSink) Append(context.Context, *obs.Envelope) (obs.Outcome, error) {
	return obs.Failed, errors.New("disk on fire")
}
func (failingSink) Close() error { return nil }

// TestObserverSinkFailure: a sink that fails every append is a warning,
// never a failed task or worker.
func TestObserverSinkFailure(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var warnings []string
	em := obs.New(obs.Options{Warn: func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() }}, failingSink{})
	defer em.Close()
	o := queueobs.NewObserver(em, "q", obs.RoleWorker)
	q := queue.New(o.Backend(e.b))
	task, _ := queue.ArgvTask([]string{"sh", "-c", "exit 0"})
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "a", Task: task, MaxAttempts: 1}}); err != nil {
		t.Fatalf("enqueue with a broken sink: %v", err)
	}
	stats, err := worker.Work(bg, q, worker.Config{Policy: e.pol, Mode: worker.Drain, Hooks: o})
	if err != nil || stats.Succeeded != 1 {
		t.Fatalf("Work with a broken sink = %+v, %v; want the task to succeed", stats, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) < 5 || !strings.Contains(warnings[0], "disk on fire") {
		t.Errorf("warnings = %q; want one per event", warnings)
	}
}

// TestQueueDraft: recovery events say so; log-level events have the
// queue's subject.
func TestQueueDraft(t *testing.T) {
	ev := queue.RecoveryEvent(&queue.Task{ID: "a", Attempt: 2, Worker: "gone", Trace: &queue.Trace{Status: execx.StatusFailed}}, t0s)
	d := queueobs.QueueDraft(ev)
	if d.Type != "queue.failed" || d.Attrs["recovered"] != true || d.Attrs["attempt"] != 2 || !d.Time.Equal(t0s) {
		t.Errorf("recovery draft = %+v", d)
	}
	d = queueobs.QueueDraft(&queue.Event{Seq: 9, Type: queue.EventRequeued, Task: "a", Attempt: 1, Worker: "w", Reason: "recovered: x"})
	if d.Type != "queue.requeued" || d.Attrs["worker"] != "w" || d.Attrs["recovered"] != true {
		t.Errorf("requeued draft = %+v", d)
	}
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	queueobs.NewObserver(em, "q", obs.RoleOrchestrator).Emit(bg, "", queueobs.QueueDraft(&queue.Event{Seq: 5, Type: queue.EventCompacted, Through: 4}))
	if envs := mem.Envelopes(); len(envs) != 1 || envs[0].Subject() != "queue/q" || envs[0].Type() != "queue.compacted" || envs[0].Correlation() != "" {
		t.Errorf("compacted envelope = %+v", envs)
	}
	if o := queueobs.NewObserver(nil, "q", obs.RoleWorker); o != nil || o.Backend(nil) != nil {
		t.Error("a nil emitter gives a non-nil observer")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
