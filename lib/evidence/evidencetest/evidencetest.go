// Package evidencetest builds artq queues for tests of goal evidence, with
// lib/queue's own API and a real worker running real processes: no event of
// the log is written by hand. A test binary that uses it must start with
//
//	if execx.IsShim() { os.Exit(execx.RunShim()) }
//
// in TestMain: the worker runs each task under its own binary as a shim.
package evidencetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/worker"
)

// Tasks are the ids Queue creates, by the state they end in.
const (
	Succeeded = "built"  // `true`
	Failed    = "broken" // `false`
	Cancelled = "nap"    // cancelled while queued
	Running   = "slow"   // `sleep 600`, its worker stopped mid-run
	Queued    = "later"  // never claimed
)

// Queue creates the artq queue directory dir holding one task in each
// state (see the constants), running the tasks' programs with workspace as
// the workspace. The running task's worker is stopped mid-run (its child
// killed): the log then holds the task as running with no live worker, as
// after a crash, until a writable open recovers it. Inspect never does.
func Queue(ctx context.Context, dir, workspace string) error {
	b, err := file.Open(dir, file.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	q, err := queue.Open(ctx, b)
	if err != nil {
		return err
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true", "false", "sleep"}, Workspace: workspace})
	if err != nil {
		return err
	}
	enqueue := func(id, program string, args ...string) error {
		_, err := q.Enqueue(ctx, []queue.EnqueueRequest{{ID: id, Task: execx.NewTask(program, args...), MaxAttempts: 1}})
		return err
	}
	if err := enqueue(Succeeded, "true"); err != nil {
		return err
	}
	if err := enqueue(Failed, "false"); err != nil {
		return err
	}
	if _, err := worker.Work(ctx, q, worker.Config{Policy: pol, Mode: worker.Drain, Poll: 10 * time.Millisecond}); err != nil {
		return err
	}
	if err := enqueue(Cancelled, "true"); err != nil {
		return err
	}
	if _, err := q.Cancel(ctx, Cancelled); err != nil {
		return err
	}

	if err := enqueue(Running, "sleep", "600"); err != nil {
		return err
	}
	wctx, stop := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := worker.Work(wctx, q, worker.Config{Policy: pol, Mode: worker.Serve, Poll: 10 * time.Millisecond})
		done <- err
	}()
	// Wait for the claim (a state, not a time), then stop the worker.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := q.Status(ctx, Running)
		if err != nil {
			stop(err)
			<-done
			return err
		}
		if st.State == queue.StateRunning {
			break
		}
		if time.Now().After(deadline) {
			stop(errors.New("timeout"))
			<-done
			return fmt.Errorf("task %s: still %s after 30s", Running, st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	errStop := errors.New("fixture: worker stopped")
	stop(errStop)
	if err := <-done; err != nil && !errors.Is(err, errStop) {
		return err
	}

	if err := enqueue(Queued, "true"); err != nil {
		return err
	}
	// Check what was built, as a reader sees it.
	want := map[string]queue.TaskState{
		Succeeded: queue.StateSucceeded, Failed: queue.StateFailed, Cancelled: queue.StateCancelled,
		Running: queue.StateRunning, Queued: queue.StateQueued,
	}
	rb, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer rb.Close()
	rq, err := queue.Inspect(ctx, rb)
	if err != nil {
		return err
	}
	for id, state := range want {
		st, err := rq.Status(ctx, id)
		if err != nil {
			return err
		}
		if st.State != state {
			return fmt.Errorf("fixture: task %s is %s, want %s", id, st.State, state)
		}
	}
	return nil
}
