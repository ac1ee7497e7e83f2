package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
)

// TestDurationAcrossWorkerPause: a worker stopped (SIGSTOP, as Ctrl-Z
// does) while its task runs records the attempt's duration on the monotonic
// clock from start to reap, pause included: never less than the time the
// worker was stopped (the task ends during the pause and is reaped after).
func TestDurationAcrossWorkerPause(t *testing.T) {
	dir, ws := filepath.Join(t.TempDir(), "q"), t.TempDir()
	if out, err := artqCmd(dir, "enqueue", "--id", "p", "--", "sh", "-c", "touch started; sleep 0.2").CombinedOutput(); err != nil {
		t.Fatalf("enqueue: %v: %s", err, out)
	}
	w := artqCmd(dir, "work", "--once", "--allow", "sh", "--workspace", ws)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			w.Process.Kill()
			t.Fatal("the task never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Process.Signal(syscall.SIGSTOP)
	const pause = 1500 * time.Millisecond
	time.Sleep(pause)
	w.Process.Signal(syscall.SIGCONT)
	if err := w.Wait(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	q, _ := inspect(t, dir)
	ts, err := q.Status(context.Background(), "p")
	if err != nil || ts.State != queue.StateSucceeded || ts.Last == nil {
		t.Fatalf("status = %+v, %v; want succeeded", ts, err)
	}
	if ts.Last.DurationMS < pause.Milliseconds() {
		t.Errorf("duration_ms = %d after a %s pause of the worker; want at least the pause (start to reap)", ts.Last.DurationMS, pause)
	}
}
