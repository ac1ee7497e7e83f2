package natsq

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/worker"
)

// The benchmarks run the same work on the file backend and on NATS (an
// embedded server with sync_interval always, and one with the default
// two-minute sync for comparison), in one run, so the ratios are fair.
// scripts/bench-nats.sh runs them and prints medians.

type benchTarget struct {
	name string
	// open returns a new handle on one fresh queue per call of setup.
	setup func(b *testing.B) func() queue.Backend
}

func benchTargets() []benchTarget {
	return []benchTarget{
		{"file", func(b *testing.B) func() queue.Backend {
			dir := filepath.Join(b.TempDir(), "q")
			return func() queue.Backend {
				be, err := file.Open(dir, file.Options{WatchInterval: 10 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { be.Close() })
				return be
			}
		}},
		// max_batch_size raised so BenchmarkEnqueueBatch is one atomic batch.
		{"nats", natsBench(natstest.Options{MaxBatch: 10000})},
		{"nats-nosync", natsBench(natstest.Options{NoSync: true, MaxBatch: 10000})},
	}
}

func natsBench(o natstest.Options) func(b *testing.B) func() queue.Backend {
	return func(b *testing.B) func() queue.Backend {
		srv := natstest.Start(b, o)
		return func() queue.Backend {
			be, err := Open(context.Background(), srv.URL(), "bench", Options{MaxBatch: o.MaxBatch})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { be.Close() })
			return be
		}
	}
}

var benchManifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)

func enqueue(id string) []queue.Proposal {
	return []queue.Proposal{{Event: &queue.Event{Time: time.Now().UTC(), Type: queue.EventEnqueued, Task: id, MaxAttempts: 1, Manifest: benchManifest}}}
}

// BenchmarkAppendSerial: one writer, one conditional append at a time.
func BenchmarkAppendSerial(b *testing.B) {
	for _, tg := range benchTargets() {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.setup(b)()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := be.Append(context.Background(), enqueue(fmt.Sprintf("t%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkAppendParallel64: 64 concurrent writers on one handle.
func BenchmarkAppendParallel64(b *testing.B) {
	for _, tg := range benchTargets() {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.setup(b)()
			var n atomic.Int64
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := be.Append(context.Background(), enqueue(fmt.Sprintf("t%d", n.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
		})
	}
}

// BenchmarkClaimLatency: one worker serving; each iteration enqueues a task
// and waits until a worker has started it (its started event is in the
// log). Reports the median and p99 of enqueue → started.
func BenchmarkClaimLatency(b *testing.B) {
	for _, tg := range benchTargets() {
		b.Run(tg.name, func(b *testing.B) {
			open := tg.setup(b)
			q := queue.New(open())
			stop := serveWorkers(b, open, 1)
			defer stop()
			reader := open()
			var lat []time.Duration
			var after uint64
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("t%d", i)
				task, _ := queue.ArgvTask([]string{"true"})
				t0 := time.Now()
				if _, err := q.Enqueue(context.Background(), []queue.EnqueueRequest{{ID: id, Task: task, MaxAttempts: 1}}); err != nil {
					b.Fatal(err)
				}
				started := false
				for !started {
					if err := reader.Read(context.Background(), after, func(ev *queue.Event) error {
						after = ev.Seq
						if ev.Task == id && ev.Type == queue.EventStarted {
							started = true
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					if !started {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						err := reader.Wait(ctx, after)
						cancel()
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// serveWorkers runs n workers (each its own handle) in Serve mode.
func serveWorkers(b *testing.B, open func() queue.Backend, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		q, err := queue.Open(ctx, open())
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker.Work(ctx, q, worker.Config{ID: fmt.Sprintf("w%d", i), Policy: pol, Concurrency: 4, Mode: worker.Serve, Poll: 100 * time.Millisecond, Lease: 10 * time.Second, Run: noop})
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func noop(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error) {
	now := time.Now()
	return &execx.Result{TaskID: t.ID, Program: t.Program, Status: execx.StatusSucceeded, StartedAt: now, EndedAt: now}, nil
}

// BenchmarkDrain: tasks/s for 1, 2 and 4 workers (each its own connection
// or handle, concurrency 4) draining no-op tasks.
func BenchmarkDrain(b *testing.B) {
	const tasks = 400
	for _, tg := range benchTargets() {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", tg.name, workers), func(b *testing.B) {
				var total time.Duration
				rounds := 0
				var counts opCounts
				for b.Loop() {
					b.StopTimer()
					open := tg.setup(b)
					q := queue.New(open())
					reqs := make([]queue.EnqueueRequest, tasks)
					for i := range reqs {
						task, _ := queue.ArgvTask([]string{"true"})
						reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%d", i), Task: task, MaxAttempts: 1}
					}
					if _, err := q.Enqueue(context.Background(), reqs); err != nil {
						b.Fatal(err)
					}
					pol, _ := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: b.TempDir()})
					qs := make([]*queue.Queue, workers)
					for i := range qs {
						var err error
						cb := &countingBackend{Backend: open(), n: &counts}
						if qs[i], err = queue.Open(context.Background(), cb); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					t0 := time.Now()
					var wg sync.WaitGroup
					for i := range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if _, err := worker.Work(context.Background(), qs[i], worker.Config{ID: fmt.Sprintf("w%d", i), Policy: pol, Concurrency: 4, Mode: worker.Drain, Poll: 100 * time.Millisecond, Lease: 10 * time.Second, Run: noop}); err != nil {
								b.Error(err)
							}
						}()
					}
					wg.Wait()
					total += time.Since(t0)
					rounds++
				}
				b.ReportMetric(float64(tasks*rounds)/total.Seconds(), "tasks/s")
				n := float64(tasks * rounds)
				b.ReportMetric(float64(counts.reads.Load())/n, "reads/task")
				b.ReportMetric(float64(counts.appends.Load())/n, "appends/task")
				b.ReportMetric(float64(counts.stale.Load())/n, "stale/task")
			})
		}
	}
}

// opCounts counts a drain's log reads, appends and appends refused as
// stale (lost races), over all its workers.
type opCounts struct{ reads, appends, stale atomic.Int64 }

type countingBackend struct {
	queue.Backend
	n *opCounts
}

func (c *countingBackend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	c.n.reads.Add(1)
	return c.Backend.Read(ctx, after, fn)
}

func (c *countingBackend) Append(ctx context.Context, ps []queue.Proposal) ([]*queue.Event, error) {
	c.n.appends.Add(1)
	evs, err := c.Backend.Append(ctx, ps)
	if errors.Is(err, queue.ErrStale) {
		c.n.stale.Add(1)
	}
	return evs, err
}

// BenchmarkEnqueueBatch: enqueue --batch of 10,000 tasks with ids (each
// checked not to exist) in one Append.
func BenchmarkEnqueueBatch(b *testing.B) {
	const n = 10000
	for _, tg := range benchTargets() {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.setup(b)()
			round := 0
			for b.Loop() {
				ps := make([]queue.Proposal, n)
				for i := range ps {
					ps[i] = enqueue(fmt.Sprintf("r%dt%d", round, i))[0]
				}
				round++
				if _, err := be.Append(context.Background(), ps); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// BenchmarkReplay100k: a cold replay (queue.Inspect on a new handle) of
// 100,000 events (25,000 tasks through started, trace and succeeded).
func BenchmarkReplay100k(b *testing.B) {
	for _, tg := range benchTargets()[:2] {
		b.Run(tg.name, func(b *testing.B) {
			open := tg.setup(b)
			w := open()
			const tasks = 25000
			var ps []queue.Proposal
			for i := range tasks {
				id := fmt.Sprintf("t%d", i)
				ps = append(ps, enqueue(id)[0])
				for _, typ := range []queue.EventType{queue.EventStarted, queue.EventTrace, queue.EventSucceeded} {
					e := &queue.Event{Time: time.Now().UTC(), Type: typ, Task: id, Attempt: 1}
					switch typ {
					case queue.EventStarted:
						e.Worker = "w1"
					case queue.EventTrace:
						e.Trace = &queue.Trace{Status: execx.StatusSucceeded}
					}
					ps = append(ps, queue.Proposal{Event: e})
				}
				if len(ps) >= 800 {
					if _, err := w.Append(context.Background(), ps); err != nil {
						b.Fatal(err)
					}
					ps = ps[:0]
				}
			}
			b.ResetTimer()
			for b.Loop() {
				q, err := queue.Inspect(context.Background(), open())
				if err != nil {
					b.Fatal(err)
				}
				if q.Seq() != 4*tasks {
					b.Fatalf("replayed to %d", q.Seq())
				}
			}
			b.ReportMetric(float64(4*tasks*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
