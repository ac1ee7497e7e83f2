package natsq

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/queuetest"
)

// TestWorkerProcessesDrain: two and four worker processes, each with its
// own connection, drain 1,000 tasks from one queue; every task runs exactly
// once and ends succeeded.
func TestWorkerProcessesDrain(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	tasks := 1000
	if testing.Short() {
		tasks = 200
	}
	for _, workers := range []int{2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			name := fmt.Sprintf("drain%d", workers)
			b := open(t, srv.URL(), name, Options{})
			q := queue.New(b)
			reqs := make([]queue.EnqueueRequest, tasks)
			for i := range reqs {
				task, _ := queue.ArgvTask([]string{"true"})
				reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%04d", i), Task: task, MaxAttempts: 1}
			}
			if _, err := q.Enqueue(bg, reqs); err != nil {
				t.Fatal(err)
			}
			runlog := filepath.Join(t.TempDir(), "runs")
			procs := make([]*workerProc, workers)
			for i := range procs {
				procs[i] = startWorker(t, srv.URL(), name, fmt.Sprintf("p%d", i), runlog,
					"ARTQ_NATSTEST_LEASE=10s", "ARTQ_NATSTEST_CONCURRENCY=4")
			}
			claimed := 0
			for i, p := range procs {
				s := p.wait(t)
				t.Logf("worker p%d: %+v", i, s)
				claimed += s.Claimed
			}
			runs := runLog(t, runlog)
			if len(runs) != tasks || claimed != tasks {
				t.Errorf("%d distinct tasks ran, %d claimed; want %d", len(runs), claimed, tasks)
			}
			for k, n := range runs {
				if n != 1 {
					t.Errorf("%s ran %d times", k, n)
				}
			}
			st := replayState(t, open(t, srv.URL(), name, Options{ReadOnly: true}))
			if c := st.Counts(); c[queue.StateSucceeded] != tasks {
				t.Errorf("counts = %v; want %d succeeded", c, tasks)
			}
			starts := map[string]int{}
			for _, ev := range queuetest.ReadAll(t, b, 0) {
				if ev.Type == queue.EventStarted {
					starts[ev.Task]++
				}
			}
			for id, n := range starts {
				if n != 1 {
					t.Errorf("task %s has %d started events", id, n)
				}
			}
		})
	}
}

// TestWorkerKilledRecovered: a worker process is killed with SIGKILL in the
// middle of a task. Its lease outlives it by its TTL, during which its task
// is left alone; then another worker process requeues the task under the
// same attempt (a crash never consumes a retry) and runs it.
func TestWorkerKilledRecovered(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	const lease = 2 * time.Second
	b := open(t, srv.URL(), "q", Options{})
	q := queue.New(b)
	task, _ := queue.ArgvTask([]string{"true"})
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "job", Task: task, MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runlog := filepath.Join(dir, "runs")
	a := startWorker(t, srv.URL(), "q", "wA", runlog, "ARTQ_NATSTEST_LEASE="+lease.String(), "ARTQ_NATSTEST_MODE=serve", "ARTQ_NATSTEST_BLOCK=job")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(runlog + ".blocked"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker A never started the task: %s", a.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	killed := time.Now()
	if alive, _ := b.Alive(bg, "wA"); !alive {
		t.Fatal("the killed worker's lease vanished at once; it should last its TTL")
	}
	bw := startWorker(t, srv.URL(), "q", "wB", runlog, "ARTQ_NATSTEST_LEASE="+lease.String(), "ARTQ_NATSTEST_MODE=serve")
	var ts queue.TaskStatus
	for {
		var err error
		if ts, err = q.Status(bg, "job"); err != nil {
			t.Fatal(err)
		}
		if ts.State == queue.StateSucceeded {
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("task not recovered and rerun: %+v\nworker B: %s", ts, bw.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	bw.cmd.Process.Signal(syscall.SIGTERM)
	bw.wait(t)
	if ts.Attempts != 1 {
		t.Errorf("attempts = %d; want 1 (the interrupted attempt runs again under its number)", ts.Attempts)
	}
	var types []string
	var requeuedAt time.Time
	for _, ev := range queuetest.ReadAll(t, b, 0) {
		types = append(types, string(ev.Type)+":"+ev.Worker)
		if ev.Type == queue.EventRequeued {
			requeuedAt = ev.Time
		}
	}
	want := "[enqueued: started:wA requeued:wA started:wB trace: succeeded:]"
	if got := fmt.Sprint(types); got != want {
		t.Errorf("log = %s; want %s", got, want)
	}
	if d := requeuedAt.Sub(killed); d < lease/2 {
		t.Errorf("recovered %s after the kill; the lease (%s, renewed every third) had to run out first", d, lease)
	}
	if runs := runLog(t, runlog); runs["job 1"] != 2 || len(runs) != 1 {
		t.Errorf("runs = %v; want job attempt 1 twice (killed, then rerun)", runs)
	}
}

// TestZombieReclaim is the zombie worker scenario, as often as
// ART_ZOMBIE_TRIALS says (default 3; scripts/crash-queue.sh runs 50):
// worker A (--concurrency 2 --lease 1s) runs X; A is SIGSTOPped past its
// lease; B (this test) finds A dead and requeues X; X's old run ends with a
// result in hand while A is stopped; A is continued while X waits queued
// and A has a free slot. A must neither claim X again nor record its old
// run: no event of the log may belong to a claim that is not current.
func TestZombieReclaim(t *testing.T) {
	trials := 3
	if testing.Short() {
		trials = 1
	}
	if n, err := strconv.Atoi(os.Getenv("ART_ZOMBIE_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	srv := natstest.Start(t, natstest.Options{})
	lateTotal := 0
	for i := range trials {
		name := fmt.Sprintf("zombie%d", i)
		b := open(t, srv.URL(), name, Options{})
		q := queue.New(b)
		task, _ := queue.ArgvTask([]string{"true"})
		if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "x", Task: task, MaxAttempts: 3}}); err != nil {
			t.Fatal(err)
		}
		runlog := filepath.Join(t.TempDir(), "runs")
		a := startWorker(t, srv.URL(), name, "wA", runlog, "ARTQ_NATSTEST_LEASE=1s", "ARTQ_NATSTEST_CONCURRENCY=2", "ARTQ_NATSTEST_MODE=serve", "ARTQ_NATSTEST_HOLD=x")
		waitFile(t, runlog+".blocked", a)
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitLeaseGone(t, b, "wA", 15*time.Second, "the stopped worker's lease never expired")
		evs, err := q.Recover(bg, "wB")
		if err != nil || len(evs) != 1 || evs[0].Type != queue.EventRequeued {
			t.Fatalf("B's recovery = %v, %v; want x requeued", evs, err)
		}
		if err := os.WriteFile(runlog+".release", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- a.cmd.Wait() }()
		select {
		case err := <-exited:
			if err == nil {
				t.Errorf("trial %d: worker A exited 0 after losing its lease; want a lease-lost failure", i)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("trial %d: worker A did not stop after losing its lease\nstderr: %s", i, a.err.String())
		}
		log := queuetest.ReadAll(t, b, 0)
		late := queuetest.LateEvents(log)
		lateTotal += len(late)
		if len(late) > 0 {
			t.Errorf("trial %d: late events: %v", i, late)
		}
		starts := 0
		for _, ev := range log {
			if ev.Type == queue.EventStarted && ev.Task == "x" {
				starts++
			}
			if ev.Type == queue.EventTrace {
				t.Errorf("trial %d: a trace was recorded for the lost claim: seq %d", i, ev.Seq)
			}
		}
		if starts != 1 {
			t.Errorf("trial %d: x was started %d times; want once (A must not claim again once its lease is gone)", i, starts)
		}
		if ts, _ := q.Status(bg, "x"); ts.State != queue.StateQueued {
			t.Errorf("trial %d: x is %s; want queued", i, ts.State)
		}
	}
	t.Logf("zombie scenario: %d trials, %d late events", trials, lateTotal)
}

func waitFile(t *testing.T, path string, w *workerProc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s never got there (%s): %s", w.id, path, w.err.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
