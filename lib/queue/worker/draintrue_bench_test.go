package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/worker"
)

// BenchmarkDrainTrue drains 2,000 tasks that each run `true` through the
// supervised runner, on the file backend, the work scripts/bench-queue.sh
// measures end to end. Run with -cpuprofile to see the worker's own share
// of a task (the per-task processes are not in a Go profile: perf them).
func BenchmarkDrainTrue(b *testing.B) {
	const tasks = 2000
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var reads, appends int64
			for b.Loop() {
				b.StopTimer()
				root := b.TempDir()
				ws := filepath.Join(root, "ws")
				if err := os.Mkdir(ws, 0o700); err != nil {
					b.Fatal(err)
				}
				be, err := file.Open(filepath.Join(root, "q"), file.Options{WatchInterval: 10 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				cb := &countingBackend{Backend: be}
				q := queue.New(cb)
				reqs := make([]queue.EnqueueRequest, tasks)
				for i := range reqs {
					task, _ := queue.ArgvTask([]string{"true"})
					reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%d", i), Task: task, MaxAttempts: 1}
				}
				if _, err := q.Enqueue(bg, reqs); err != nil {
					b.Fatal(err)
				}
				pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: ws})
				if err != nil {
					b.Fatal(err)
				}
				cb.reads.Store(0)
				cb.appends.Store(0)
				b.StartTimer()
				st, err := worker.Work(bg, q, worker.Config{Policy: pol, Concurrency: conc, Mode: worker.Drain})
				b.StopTimer()
				if err != nil || st.Succeeded != tasks {
					b.Fatalf("drain: %+v, %v", st, err)
				}
				be.Close()
				reads += cb.reads.Load()
				appends += cb.appends.Load()
				b.StartTimer()
			}
			b.ReportMetric(float64(tasks*b.N)/b.Elapsed().Seconds(), "tasks/s")
			b.ReportMetric(float64(reads)/float64(tasks*b.N), "reads/task")
			b.ReportMetric(float64(appends)/float64(tasks*b.N), "appends/task")
		})
	}
}

// countingBackend counts the log reads and appends a drain makes.
type countingBackend struct {
	queue.Backend
	reads, appends atomic.Int64
}

func (c *countingBackend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	c.reads.Add(1)
	return c.Backend.Read(ctx, after, fn)
}

func (c *countingBackend) Append(ctx context.Context, ps []queue.Proposal) ([]*queue.Event, error) {
	c.appends.Add(1)
	return c.Backend.Append(ctx, ps)
}

// AppendEach passes shared commits through (queue.EachAppender), so the
// count sees the drain the worker makes on the bare backend.
func (c *countingBackend) AppendEach(ctx context.Context, calls [][]queue.Proposal) ([][]*queue.Event, []error) {
	c.appends.Add(int64(len(calls)))
	return c.Backend.(queue.EachAppender).AppendEach(ctx, calls)
}
