package natsq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/queuetest"
	"github.com/art-runtime/art/lib/queue/worker"
)

// TestPartitionKillsWithinLease: a worker cut off from the server by a
// frozen network (a proxy that forwards nothing but keeps the connection
// open) kills its running task by its own lease clock, before the server
// expires its lease key: by the time any other worker can see the worker
// gone (and recover its task), the task is already dead. No overlap, and
// no waiting for a request timeout.
func TestPartitionKillsWithinLease(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	proxy := natstest.NewProxy(t, srv.URL())
	direct := open(t, srv.URL(), "part", Options{})
	q := queue.New(direct)
	task, _ := queue.ArgvTask([]string{"true"})
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "x", Task: task, MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	cut := open(t, proxy.URL(), "part", Options{})
	wq, err := queue.Open(bg, cut)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var mu sync.Mutex
	killed := false
	run := func(ctx context.Context, p *execx.Policy, tk *execx.Task, opt execx.Options) (*execx.Result, error) {
		close(started)
		<-ctx.Done()
		mu.Lock()
		killed = true
		mu.Unlock()
		return nil, context.Cause(ctx)
	}
	done := make(chan error, 1)
	go func() {
		_, err := worker.Work(bg, wq, worker.Config{ID: "cut", Policy: pol, Poll: 50 * time.Millisecond, Lease: 2 * time.Second, Run: run})
		done <- err
	}()
	<-started
	proxy.Freeze()
	// Watch from the other side of the partition until the server lets the
	// worker's lease go: the task must be dead by then.
	waitLeaseGone(t, direct, "cut", 30*time.Second, "the cut-off worker's lease never expired")
	mu.Lock()
	dead := killed
	mu.Unlock()
	if !dead {
		t.Fatal("the server expired the lease while the cut-off worker's task was still running: another worker could run it at the same time")
	}
	if evs, err := q.Recover(bg, "other"); err != nil || len(evs) != 1 || evs[0].Type != queue.EventRequeued {
		t.Errorf("recovery = %v, %v; want x requeued", evs, err)
	}
	proxy.Thaw()
	if err := <-done; err == nil {
		t.Error("the cut-off worker exited 0; want a lease-lost failure")
	}
	if late := queuetest.LateEvents(queuetest.ReadAll(t, direct, 0)); len(late) > 0 {
		t.Errorf("late events: %v", late)
	}
}
