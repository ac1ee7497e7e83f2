package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// These tests drive real artq processes (the test binary, installed on PATH
// as artq by testscript.Main, or an artq built with -tags failpoint where
// a process must stop itself at a failpoint) and kill them with SIGKILL.

func artqCmd(dir string, args ...string) *exec.Cmd {
	return artqBinCmd("artq", dir, args...)
}

// artqBinCmd runs the artq binary bin on the queue in dir.
func artqBinCmd(bin, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GORACE="+systest.NoExitSleep())
	return cmd
}

// failpointArtq builds artq with -tags failpoint, the only build in which
// ARTQ_FAILPOINT does anything (lib/queue/failpoint.go).
func failpointArtq(t *testing.T) string {
	t.Helper()
	return systest.GoBuild(t, ".", "failpoint")
}

// killedBySIGKILL reports whether err is the exit of a process that
// SIGKILL ended.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestFailpointOnlyWithTag: ARTQ_FAILPOINT kills an artq built with -tags
// failpoint at the named point, and a normal build (this test binary, as
// every released artq) ignores it: the worker runs the task to the end and
// a batch enqueue is written whole.
func TestFailpointOnlyWithTag(t *testing.T) {
	if queue.FailpointsBuilt {
		t.Skip("this test binary was built with -tags failpoint; the normal build is what is checked here")
	}
	fp := failpointArtq(t)
	for _, c := range []struct {
		name, bin string
		killed    bool
	}{{"normal", "artq", false}, {"failpoint", fp, true}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir, ws := filepath.Join(root, "q"), filepath.Join(root, "ws")
			os.Mkdir(ws, 0o700)
			if out, err := artqCmd(dir, "enqueue", "--id", "a", "--", "true").CombinedOutput(); err != nil {
				t.Fatalf("enqueue: %v: %s", err, out)
			}
			for _, point := range []string{"after-claim", "after-run", "after-trace"} {
				w := artqBinCmd(c.bin, dir, "work", "--drain", "--allow", "true", "--workspace", ws)
				w.Env = append(w.Env, "ARTQ_FAILPOINT="+point)
				out, err := w.CombinedOutput()
				if got := killedBySIGKILL(err); got != c.killed {
					t.Fatalf("%s build, ARTQ_FAILPOINT=%s: killed %v (%v: %s); want %v", c.name, point, got, err, out, c.killed)
				}
				if !c.killed && err != nil {
					t.Fatalf("%s build, ARTQ_FAILPOINT=%s: %v: %s", c.name, point, err, out)
				}
				if c.killed {
					break // the task is now claimed by a dead worker
				}
			}
			e := artqBinCmd(c.bin, dir, "enqueue", "--batch")
			e.Stdin = strings.NewReader(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}` + "\n")
			e.Env = append(e.Env, "ARTQ_FAILPOINT=torn-write:3")
			out, err := e.CombinedOutput()
			if got := killedBySIGKILL(err); got != c.killed || (!c.killed && err != nil) {
				t.Fatalf("%s build, ARTQ_FAILPOINT=torn-write:3: killed %v (%v: %s); want %v", c.name, got, err, out, c.killed)
			}
			q, _ := inspect(t, dir)
			q.View(context.Background(), func(st *queue.State) error {
				want := 2 // a, and the batch's task written whole
				if c.killed {
					want = 1 // the torn batch is not a task
				} else if task := st.Task("a"); task == nil || task.State != queue.StateSucceeded {
					t.Errorf("normal build: task a is %+v; want succeeded despite ARTQ_FAILPOINT", task)
				}
				if st.Len() != want {
					t.Errorf("%s build: %d tasks; want %d", c.name, st.Len(), want)
				}
				return nil
			})
		})
	}
}

// inspect replays the queue read-only and checks it with fsck.
func inspect(t *testing.T, dir string) (*queue.Queue, queue.Backend) {
	t.Helper()
	b, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if rep, err := queue.Fsck(context.Background(), b); err != nil {
		t.Fatalf("fsck: %v (%+v)", err, rep)
	}
	q, err := queue.Inspect(context.Background(), b)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return q, b
}

func allEvents(t *testing.T, b queue.Backend) []*queue.Event {
	t.Helper()
	var evs []*queue.Event
	if err := b.Read(context.Background(), 0, func(ev *queue.Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return evs
}

// retryFailed retries, through the library, every failed task with
// attempts left: the explicit retry a user or script would make.
func retryFailed(t *testing.T, dir string) int {
	t.Helper()
	b, err := file.Open(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q := queue.New(b)
	var ids []string
	q.View(context.Background(), func(st *queue.State) error {
		st.Tasks(func(task *queue.Task) bool {
			if task.State == queue.StateFailed && task.Attempt < task.MaxAttempts {
				ids = append(ids, task.ID)
			}
			return true
		})
		return nil
	})
	for _, id := range ids {
		if _, err := q.Retry(context.Background(), id); err != nil {
			t.Fatalf("retry %s: %v", id, err)
		}
	}
	return len(ids)
}

type runKey struct {
	task    string
	attempt int
}

func readRuns(t *testing.T, path string) map[runKey]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	runs := map[runKey]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("marker line %q", line)
		}
		a, _ := strconv.Atoi(f[1])
		runs[runKey{f[0], a}]++
	}
	return runs
}

// checkRuns holds the log and the marker file against each other: every
// real run was claimed (runs ≤ started), every start after the first of an
// attempt followed a requeue (an untraced attempt), and no attempt was
// started again after its trace.
func checkRuns(t *testing.T, evs []*queue.Event, runs map[runKey]int) {
	t.Helper()
	started := map[runKey]int{}
	requeued := map[runKey]int{}
	traced := map[runKey]bool{}
	for _, ev := range evs {
		k := runKey{ev.Task, ev.Attempt}
		switch ev.Type {
		case queue.EventStarted:
			if traced[k] {
				t.Errorf("task %s attempt %d started again after its trace (seq %d)", k.task, k.attempt, ev.Seq)
			}
			started[k]++
		case queue.EventRequeued:
			requeued[k]++
		case queue.EventTrace:
			if traced[k] {
				t.Errorf("task %s attempt %d traced twice", k.task, k.attempt)
			}
			traced[k] = true
		}
	}
	for k, n := range runs {
		if n > started[k] {
			t.Errorf("task %s attempt %d ran %d times but was started %d times", k.task, k.attempt, n, started[k])
		}
	}
	for k, n := range started {
		if n > requeued[k]+1 {
			t.Errorf("task %s attempt %d started %d times with %d requeues", k.task, k.attempt, n, requeued[k])
		}
	}
}

// TestCrashSoak kills workers (and enqueuers) with SIGKILL at random points,
// and at failpoints between claim and run, run and trace, trace and
// terminal event; restarts; and checks after every kill that the log
// replays, no acknowledged task is lost and attempts never exceed their
// maximum; at the end, that every task finished and no traced attempt ran
// twice. ART_CRASH_ITERS sets the number of kills (default 200), and
// ART_CRASH_SEED the random seed.
func TestCrashSoak(t *testing.T) {
	iters := 200
	if s := os.Getenv("ART_CRASH_ITERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ART_CRASH_ITERS=%q", s)
		}
		iters = n
	} else if testing.Short() {
		iters = 40
	}
	seed := uint64(20261130)
	if s := os.Getenv("ART_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("%d iterations, seed %d (ART_CRASH_ITERS, ART_CRASH_SEED)", iters, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	root := t.TempDir()
	dir, ws := filepath.Join(root, "q"), filepath.Join(root, "ws")
	os.Mkdir(ws, 0o700)
	marker := filepath.Join(ws, "runs")
	acked := map[string]bool{}
	windows := map[string]int{}
	next := 0
	for i := range iters {
		var last uint64
		if i > 0 {
			q, _ := inspect(t, dir)
			last = q.Seq()
		}
		// Enqueuers, some of which are killed mid-way.
		type enq struct {
			cmd *exec.Cmd
			id  string
		}
		var enqs []enq
		for range 1 + rng.IntN(2) {
			next++
			id := fmt.Sprintf("t%04d", next)
			need := 1 + rng.IntN(3) // the attempt that succeeds
			script := fmt.Sprintf(`echo "$ARTQ_TASK_ID $ARTQ_ATTEMPT" >> runs; sleep 0.0%d; [ "$ARTQ_ATTEMPT" -ge %d ]`, rng.IntN(6), need)
			cmd := artqCmd(dir, "enqueue", "--id", id, "--max-attempts", "3", "--", "sh", "-c", script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			enqs = append(enqs, enq{cmd, id})
		}
		// A worker, sometimes armed with a failpoint (an artq built with
		// -tags failpoint).
		armed := rng.IntN(10) < 4
		bin := "artq"
		if armed {
			bin = failpointArtq(t)
		}
		w := artqBinCmd(bin, dir, "work", "--allow", "sh", "--workspace", ws, "--concurrency", "2", "--poll", "50ms")
		if armed {
			fp := []string{"after-claim", "after-run", "after-trace"}[rng.IntN(3)]
			w.Env = append(w.Env, "ARTQ_FAILPOINT="+fp)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { w.Wait(); close(exited) }()
		// An armed worker kills itself at its failpoint; otherwise (or if
		// it never gets there) it is killed at a random moment.
		delay := time.Duration(rng.IntN(250)) * time.Millisecond
		if armed {
			delay = time.Second
		}
		select {
		case <-exited:
		case <-time.After(delay):
			w.Process.Kill()
			<-exited
		}
		for _, e := range enqs {
			if rng.IntN(4) == 0 {
				e.cmd.Process.Kill()
			}
			if err := e.cmd.Wait(); err == nil {
				acked[e.id] = true
			}
		}
		// Invariants after every kill.
		q, _ := inspect(t, dir)
		q.View(context.Background(), func(st *queue.State) error {
			for id := range acked {
				if st.Task(id) == nil {
					t.Fatalf("iteration %d: acknowledged task %s lost", i, id)
				}
			}
			st.Tasks(func(task *queue.Task) bool {
				if task.Attempts > task.MaxAttempts || task.Attempt > task.MaxAttempts {
					t.Fatalf("iteration %d: task %s at attempt %d of %d", i, task.ID, task.Attempt, task.MaxAttempts)
				}
				return true
			})
			windows[window(st, last)]++
			return nil
		})
		if rng.IntN(3) == 0 {
			retryFailed(t, dir)
		}
	}
	// Restart without killing until everything has finished.
	for round := 0; ; round++ {
		if round == 10 {
			t.Fatal("tasks still unfinished after 10 drains")
		}
		out, err := artqCmd(dir, "work", "--drain", "--allow", "sh", "--workspace", ws, "--concurrency", "2").CombinedOutput()
		if err != nil {
			t.Fatalf("final drain: %v: %s", err, out)
		}
		if retryFailed(t, dir) == 0 {
			break
		}
	}
	q, b := inspect(t, dir)
	var total int
	q.View(context.Background(), func(st *queue.State) error {
		total = st.Len()
		st.Tasks(func(task *queue.Task) bool {
			if task.State != queue.StateSucceeded {
				t.Errorf("task %s ended %s at attempt %d/%d", task.ID, task.State, task.Attempt, task.MaxAttempts)
			}
			return true
		})
		return nil
	})
	runs := readRuns(t, marker)
	checkRuns(t, allEvents(t, b), runs)
	t.Logf("%d tasks (%d acknowledged), %d runs; kills by window: %v", total, len(acked), len(runs), windows)
	for _, w := range []string{"claimed, not traced", "traced, not finished"} {
		if windows[w] == 0 {
			t.Errorf("no kill landed in window %q: the soak does not cover it", w)
		}
	}
}

// window names where the last kill landed, from the tasks the dead worker
// left running and the events appended since seq `since`.
func window(st *queue.State, since uint64) string {
	w := "idle or between tasks"
	st.Running(func(task *queue.Task) {
		if task.LastSeq <= since {
			return
		}
		if task.Trace != nil {
			w = "traced, not finished"
		} else if w != "traced, not finished" {
			w = "claimed, not traced"
		}
	})
	return w
}

// TestTwoWorkersFortyEnqueuers: two worker processes and forty concurrent
// enqueuer processes on one queue; every task runs exactly once.
func TestTwoWorkersFortyEnqueuers(t *testing.T) {
	root := t.TempDir()
	dir, ws := filepath.Join(root, "q"), filepath.Join(root, "ws")
	os.Mkdir(ws, 0o700)
	var workers []*exec.Cmd
	for range 2 {
		w := artqCmd(dir, "work", "--allow", "sh", "--workspace", ws, "--concurrency", "2", "--poll", "100ms")
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	const enqueuers, each = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, enqueuers)
	for e := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch strings.Builder
			for i := range each {
				id := ""
				if e%2 == 0 { // half choose ids (conditional appends), half are generated
					id = fmt.Sprintf(`"id":"e%02d-%d",`, e, i)
				}
				fmt.Fprintf(&batch, `{"apiVersion":"art/v1alpha1","kind":"Task",%s"program":"sh","args":["-c","echo $ARTQ_TASK_ID >> runs"]}`+"\n", id)
			}
			cmd := artqCmd(dir, "enqueue", "--batch", "-o", "text")
			cmd.Stdin = strings.NewReader(batch.String())
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("enqueuer %d: %v: %s", e, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		q, _ := inspect(t, dir)
		var s queue.Summary
		q.View(context.Background(), func(st *queue.State) error { s = queue.SummaryOf(st); return nil })
		if s.Succeeded == enqueuers*each {
			break
		}
		if s.Failed+s.Cancelled > 0 || time.Now().After(deadline) {
			t.Fatalf("summary %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range workers {
		w.Process.Signal(syscall.SIGTERM)
		err := w.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("worker after SIGTERM: %v; want exit 130", err)
		}
	}
	data, err := os.ReadFile(filepath.Join(ws, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	sort.Strings(lines)
	q, b := inspect(t, dir)
	var ids []string
	q.View(context.Background(), func(st *queue.State) error {
		st.Tasks(func(task *queue.Task) bool { ids = append(ids, task.ID); return true })
		return nil
	})
	sort.Strings(ids)
	if strings.Join(lines, " ") != strings.Join(ids, " ") {
		t.Errorf("%d runs for %d tasks: each task must run exactly once", len(lines), len(ids))
	}
	started := map[string]int{}
	workersSeen := map[string]bool{}
	for _, ev := range allEvents(t, b) {
		if ev.Type == queue.EventStarted {
			started[ev.Task]++
			workersSeen[ev.Worker] = true
		}
	}
	for id, n := range started {
		if n != 1 {
			t.Errorf("task %s started %d times", id, n)
		}
	}
	t.Logf("%d tasks run once each by %d workers", len(ids), len(workersSeen))
}
