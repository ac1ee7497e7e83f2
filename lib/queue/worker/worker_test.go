package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/worker"
)

var bg = context.Background()

type env struct {
	dir, ws string
	b       *file.Backend
	q       *queue.Queue
	pol     *execx.Policy
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{dir: filepath.Join(root, "q"), ws: filepath.Join(root, "ws")}
	os.Mkdir(e.ws, 0o700)
	b, err := file.Open(e.dir, file.Options{WatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e.b, e.q = b, queue.New(b)
	e.pol, err = worker.Policy("", execx.Narrowing{Allow: []string{"sh", "sleep"}, Workspace: e.ws})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) enqueue(t *testing.T, id string, max int, argv ...string) {
	t.Helper()
	task, err := queue.ArgvTask(argv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Enqueue(bg, []queue.EnqueueRequest{{ID: id, Task: task, MaxAttempts: max}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) status(t *testing.T, id string) queue.TaskStatus {
	t.Helper()
	ts, err := e.q.Status(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func (e *env) waitState(t *testing.T, id string, want queue.TaskState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if e.status(t, id).State == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("task %s is %s after 30s; want %s", id, e.status(t, id).State, want)
}

// runs reads the marker file tasks append "ID ATTEMPT" lines to.
func (e *env) runs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.ws, "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(strings.ReplaceAll(string(data), " ", "/"))
	sort.Strings(lines)
	return lines
}

const mark = `echo "$ARTQ_TASK_ID $ARTQ_ATTEMPT" >> runs`

func (e *env) events(t *testing.T) []*queue.Event {
	t.Helper()
	var out []*queue.Event
	if err := e.b.Read(bg, 0, func(ev *queue.Event) error { out = append(out, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWorkDrain(t *testing.T) {
	e := newEnv(t)
	for i := range 6 {
		code := 0
		if i%3 == 2 {
			code = 9
		}
		e.enqueue(t, fmt.Sprintf("t%d", i), 1, "sh", "-c", fmt.Sprintf("%s; exit %d", mark, code))
	}
	stats, err := worker.Work(bg, e.q, worker.Config{Policy: e.pol, Concurrency: 3, Mode: worker.Drain, OutputDir: filepath.Join(e.dir, "out")})
	if err != nil {
		t.Fatalf("Work = %v", err)
	}
	if stats.Claimed != 6 || stats.Succeeded != 4 || stats.Failed != 2 {
		t.Errorf("stats = %+v; want 6 claimed, 4 succeeded, 2 failed", stats)
	}
	if got := strings.Join(e.runs(t), " "); got != "t0/1 t1/1 t2/1 t3/1 t4/1 t5/1" {
		t.Errorf("runs = %s; want each task once", got)
	}
	if ts := e.status(t, "t2"); ts.State != queue.StateFailed || ts.Last.ExitCode != 9 {
		t.Errorf("t2 = %+v; want failed with exit 9", ts)
	}
	// Trace, then terminal: in the log, for every attempt.
	seen := map[string]queue.EventType{}
	for _, ev := range e.events(t) {
		switch ev.Type {
		case queue.EventTrace:
			seen[ev.Task] = ev.Type
		case queue.EventSucceeded, queue.EventFailed:
			if seen[ev.Task] != queue.EventTrace {
				t.Errorf("task %s: %s without a trace before it", ev.Task, ev.Type)
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(e.dir, "out", "t0.1.out")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("output file: %v, %v", fi, err)
	}
}

func TestWorkOnce(t *testing.T) {
	e := newEnv(t)
	e.enqueue(t, "a", 1, "sh", "-c", mark)
	e.enqueue(t, "b", 1, "sh", "-c", mark)
	stats, err := worker.Work(bg, e.q, worker.Config{Policy: e.pol, Concurrency: 4, Mode: worker.Once})
	if err != nil || stats.Claimed != 1 {
		t.Fatalf("Work(Once) = %+v, %v; want one task", stats, err)
	}
	if e.status(t, "a").State != queue.StateSucceeded || e.status(t, "b").State != queue.StateQueued {
		t.Error("--once did not run exactly the oldest task")
	}
}

// serve runs a worker in the background until stop is called.
func serve(t *testing.T, e *env, cfg worker.Config) (stop func(error) (worker.Stats, error)) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(bg)
	type result struct {
		s   worker.Stats
		err error
	}
	done := make(chan result, 1)
	cfg.Policy = e.pol
	if cfg.Poll == 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = e.work()
	}
	go func() {
		s, err := worker.Work(ctx, e.q, cfg)
		done <- result{s, err}
	}()
	stopped := false
	stop = func(cause error) (worker.Stats, error) {
		if !stopped {
			stopped = true
			cancel(cause)
		}
		r := <-done
		return r.s, r.err
	}
	t.Cleanup(func() {
		if !stopped {
			stop(errors.New("test over"))
		}
	})
	return stop
}

func TestWorkCancelRunning(t *testing.T) {
	e := newEnv(t)
	e.enqueue(t, "long", 1, "sh", "-c", mark+"; sleep 60")
	stop := serve(t, e, worker.Config{})
	e.waitState(t, "long", queue.StateRunning)
	ts, err := queue.New(e.b).Cancel(bg, "long")
	if err != nil || !ts.CancelRequested {
		t.Fatalf("Cancel = %+v, %v", ts, err)
	}
	e.waitState(t, "long", queue.StateCancelled)
	if ts := e.status(t, "long"); ts.Last == nil || ts.Last.Status != execx.StatusCancelled {
		t.Errorf("cancelled task's last run = %+v; want a cancelled trace", ts.Last)
	}
	cause := errors.New("stop")
	if _, err := stop(cause); !errors.Is(err, cause) {
		t.Errorf("Work after stop = %v; want the cause", err)
	}
}

// TestWorkShutdownLeavesToRecovery: a stopped worker kills its task and
// appends nothing for it; the next Open requeues it under the same attempt
// and it runs again.
func TestWorkShutdownLeavesToRecovery(t *testing.T) {
	e := newEnv(t)
	e.enqueue(t, "job", 2, "sh", "-c", mark+`; test -e again || { touch again; sleep 60; }`)
	stop := serve(t, e, worker.Config{})
	e.waitState(t, "job", queue.StateRunning)
	for len(e.runs(t)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	stats, err := stop(errors.New("SIGTERM"))
	if err == nil || stats.Interrupted != 1 {
		t.Fatalf("stopped worker: %+v, %v; want one interrupted task and the cause", stats, err)
	}
	ts := e.status(t, "job")
	if ts.State != queue.StateRunning || ts.Last != nil {
		t.Fatalf("after shutdown: %+v; want still running, no trace", ts)
	}
	q, err := queue.Open(bg, e.b)
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ := q.Status(bg, "job"); ts.State != queue.StateQueued || ts.Attempts != 1 {
		t.Fatalf("after recovery: %+v; want queued with attempts 1", ts)
	}
	if _, err := worker.Work(bg, q, worker.Config{Policy: e.pol, Mode: worker.Drain}); err != nil {
		t.Fatal(err)
	}
	if ts := e.status(t, "job"); ts.State != queue.StateSucceeded || ts.Attempts != 1 {
		t.Errorf("after rerun: %+v; want succeeded on attempt 1", ts)
	}
	if got := strings.Join(e.runs(t), " "); got != "job/1 job/1" {
		t.Errorf("runs = %s; want attempt 1 twice (interrupted, then rerun)", got)
	}
}

// forge appends events for a task as a worker that is not alive would have.
func forge(t *testing.T, e *env, id, worker string, types ...queue.EventType) {
	t.Helper()
	for _, typ := range types {
		var last uint64
		e.q.View(bg, func(st *queue.State) error { last = st.Task(id).LastSeq; return nil })
		ev := &queue.Event{Time: time.Now(), Type: typ, Task: id, Attempt: 1, Worker: worker}
		if typ == queue.EventTrace {
			ev.Worker, ev.Trace = "", &queue.Trace{Status: execx.StatusSucceeded}
		} else if typ != queue.EventStarted {
			ev.Worker = ""
		}
		if _, err := e.b.Append(bg, []queue.Proposal{{Event: ev, Expect: last}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecovery(t *testing.T) {
	e := newEnv(t)
	e.enqueue(t, "untraced", 3, "sh", "-c", mark)
	e.enqueue(t, "traced", 3, "sh", "-c", mark)
	e.enqueue(t, "cancelreq", 3, "sh", "-c", mark)
	e.enqueue(t, "live", 3, "sh", "-c", mark)
	forge(t, e, "untraced", "ghost", queue.EventStarted)
	forge(t, e, "traced", "ghost", queue.EventStarted, queue.EventTrace)
	forge(t, e, "cancelreq", "ghost", queue.EventStarted, queue.EventCancelRequested)
	// "live" runs under a worker whose lease is held (by another backend
	// instance: another process, as far as the lock is concerned).
	other, err := file.Open(e.dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lease, err := other.AcquireLease(bg, "alive", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	forge(t, e, "live", "alive", queue.EventStarted)

	if _, err := queue.Inspect(bg, e.b); err != nil {
		t.Fatal(err)
	}
	if e.status(t, "untraced").State != queue.StateRunning {
		t.Fatal("Inspect recovered a task")
	}
	q, err := queue.Open(bg, e.b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]queue.TaskState{"untraced": queue.StateQueued, "traced": queue.StateSucceeded, "cancelreq": queue.StateCancelled, "live": queue.StateRunning}
	for id, st := range want {
		if ts, _ := q.Status(bg, id); ts.State != st || ts.Attempts != 1 {
			t.Errorf("%s after Open: %s attempts %d; want %s attempts 1", id, ts.State, ts.Attempts, st)
		}
	}
	// Only the untraced one runs again, under attempt 1.
	if _, err := worker.Work(bg, q, worker.Config{Policy: e.pol, Mode: worker.Drain}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.runs(t), " "); got != "untraced/1" {
		t.Errorf("runs = %q; want only untraced/1", got)
	}
	if ts := e.status(t, "live"); ts.State != queue.StateRunning || ts.Worker != "alive" {
		t.Errorf("live worker's task = %+v; want left alone", ts)
	}
}

func TestWorkerIDInUse(t *testing.T) {
	e := newEnv(t)
	other, _ := file.Open(e.dir, file.Options{})
	defer other.Close()
	l, err := other.AcquireLease(bg, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = worker.Work(bg, e.q, worker.Config{ID: "w1", Policy: e.pol, Mode: worker.Drain})
	if exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("a second worker with a live id: %v; want a conflict", err)
	}
}

func TestEnqueueIdempotence(t *testing.T) {
	e := newEnv(t)
	task, _ := queue.ArgvTask([]string{"true"})
	other, _ := queue.ArgvTask([]string{"false"})
	r := []queue.EnqueueRequest{{ID: "a", Task: task, MaxAttempts: 1}}
	out, err := e.q.Enqueue(bg, r)
	if err != nil || !out[0].Created {
		t.Fatalf("first enqueue: %+v %v", out, err)
	}
	// Through a second Queue (another process's view) as well.
	q2 := queue.New(e.b)
	if out, err = q2.Enqueue(bg, r); err != nil || out[0].Created {
		t.Errorf("same id, same manifest: %+v %v; want an idempotent success", out, err)
	}
	_, err = q2.Enqueue(bg, []queue.EnqueueRequest{{ID: "a", Task: other, MaxAttempts: 1}})
	if exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("same id, other manifest: %v; want exit 3", err)
	}
	// A batch with one conflict appends nothing.
	before := len(e.events(t))
	_, err = q2.Enqueue(bg, []queue.EnqueueRequest{{ID: "b", Task: task, MaxAttempts: 1}, {ID: "a", Task: other, MaxAttempts: 1}})
	if exitcode.Of(err) != exitcode.Conflict || len(e.events(t)) != before {
		t.Errorf("batch with a conflict: %v, %d events (had %d)", err, len(e.events(t)), before)
	}
}

// TestCancelExitRace: a cancel that arrives as the command exits is decided
// one way. The runner reports such a run as cancelled although the command
// exited 0 on its own (no signal): it is recorded succeeded, exit code 0.
// A command the cancel's signal ended is recorded cancelled.
func TestCancelExitRace(t *testing.T) {
	cases := []struct {
		name string
		res  execx.Result
		want queue.TaskState
	}{
		{"exited 0 as the cancel came", execx.Result{Status: execx.StatusCancelled, Cancelled: true, ExitCode: 0}, queue.StateSucceeded},
		{"killed by the cancel", execx.Result{Status: execx.StatusCancelled, Cancelled: true, ExitCode: 143, Signal: "SIGTERM"}, queue.StateCancelled},
		{"exited 1 as the cancel came", execx.Result{Status: execx.StatusCancelled, Cancelled: true, ExitCode: 1}, queue.StateCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.enqueue(t, "x", 1, "sh", "-c", "exit 0")
			run := func(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
				<-ctx.Done() // the cancel request reached the runner
				res := c.res
				res.TaskID, res.Program = task.ID, task.Program
				return &res, nil
			}
			stop := serve(t, e, worker.Config{Run: run})
			e.waitState(t, "x", queue.StateRunning)
			if _, err := e.q.Cancel(bg, "x"); err != nil {
				t.Fatal(err)
			}
			e.waitState(t, "x", c.want)
			ts := e.status(t, "x")
			if ts.Last == nil || ts.Last.ExitCode != c.res.ExitCode {
				t.Errorf("last run = %+v; want exit code %d", ts.Last, c.res.ExitCode)
			}
			stop(errors.New("done"))
		})
	}
}

// TestOutputDirFullRecordsTrace: an attempt whose output cannot be saved
// (here: the output directory is replaced by a file while the command
// runs; cmd/artq's disk tests fill a real tmpfs) still has its trace and
// terminal event appended, with output_saved false and the reason; the
// command is never run again for it.
func TestOutputDirFullRecordsTrace(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	e.enqueue(t, "x", 1, "sh", "-c", mark+"; echo hello")
	runs := 0
	run := func(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
		runs++
		// The disk "fills" while the command runs: the directory is gone
		// and a file stands in its place.
		os.RemoveAll(out)
		os.WriteFile(out, nil, 0o600)
		return execx.Run(ctx, p, task, opt)
	}
	s, err := worker.Work(bg, e.q, worker.Config{Policy: e.pol, Mode: worker.Drain, OutputDir: out, Run: run, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("Work = %v; want the result recorded without its output", err)
	}
	if s.Succeeded != 1 || runs != 1 {
		t.Errorf("stats %+v, %d runs; want one run, succeeded", s, runs)
	}
	var tr *queue.Trace
	for _, ev := range e.events(t) {
		if ev.Type == queue.EventTrace {
			tr = ev.Trace
		}
	}
	if tr == nil || tr.OutputSaved == nil || *tr.OutputSaved || tr.OutputError == "" {
		t.Fatalf("trace = %+v; want output_saved false with a reason", tr)
	}
	if !strings.Contains(string(queue.AppendRecord(nil, &queue.Event{Type: queue.EventTrace, Trace: tr})), `"output_saved":false,"output_error":`) {
		t.Error("the record does not carry output_saved false and output_error")
	}
	// Another worker finds nothing to run again.
	s, err = worker.Work(bg, e.q, worker.Config{Policy: e.pol, Mode: worker.Drain, Poll: 20 * time.Millisecond})
	if err != nil || s.Claimed != 0 {
		t.Errorf("second worker = %+v, %v; want nothing claimed", s, err)
	}
}
