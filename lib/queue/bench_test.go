package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// Benchmarks of the library API on the file backend, on the disk that holds
// the test's temp dir (TMPDIR). Every enqueue is an fsync'd append.
//
//	go test -run '^$' -bench 'Append|Replay1M|Summary200k|EnqueueBatch' -benchtime 3x ./lib/queue/

var bg = context.Background()

func benchQueue(b *testing.B, opts file.Options) *queue.Queue {
	b.Helper()
	be, err := file.Open(filepath.Join(b.TempDir(), "q"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return queue.New(be)
}

var benchTask = func() *execx.Task {
	t, err := queue.ArgvTask([]string{"make", "-C", "src", "test"})
	if err != nil {
		panic(err)
	}
	return t
}()

func enqueueOne(b *testing.B, q *queue.Queue) {
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{Task: benchTask, MaxAttempts: 1}}); err != nil {
		b.Fatal(err)
	}
}

func perSecond(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "enqueues/s")
}

// BenchmarkAppendSerial: one writer, one fsync per enqueue.
func BenchmarkAppendSerial(b *testing.B) {
	q := benchQueue(b, file.Options{})
	for b.Loop() {
		enqueueOne(b, q)
	}
	perSecond(b, b.N)
}

func parallel64(b *testing.B, opts file.Options) {
	q := benchQueue(b, opts)
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			enqueueOne(b, q)
		}
	})
	perSecond(b, b.N)
}

// BenchmarkAppendParallel64: 64 goroutines enqueueing at once; group commit
// shares each fsync among the appends waiting for it.
func BenchmarkAppendParallel64(b *testing.B) { parallel64(b, file.Options{}) }

// BenchmarkAppendParallel64NoGroup is the same load with one fsync per
// append: the baseline for group commit's ratio.
func BenchmarkAppendParallel64NoGroup(b *testing.B) { parallel64(b, file.Options{NoGroupCommit: true}) }

// BenchmarkEnqueueBatch: 50,000 tasks in one Enqueue call (one append, one
// fsync), as `artq enqueue --batch` does after decoding its input.
func BenchmarkEnqueueBatch(b *testing.B) {
	const n = 50000
	q := benchQueue(b, file.Options{})
	reqs := make([]queue.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = queue.EnqueueRequest{Task: benchTask, MaxAttempts: 1}
	}
	for b.Loop() {
		if _, err := q.Enqueue(bg, reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// writeLog writes a log of tasks*len(kinds) events straight to
// dir/events.log, as a long-lived queue would have it: each task enqueued,
// then (per kinds) started, traced and finished.
func writeLog(tb testing.TB, dir string, tasks, perTask int) int {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, file.LogName))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	manifest := []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"ID","program":"make","args":["-C","src","test"],"dir":"."}`)
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	var seq uint64
	var line []byte
	emit := func(ev *queue.Event) {
		seq++
		ev.Seq = seq
		ev.Time = now.Add(time.Duration(seq) * time.Microsecond)
		line = queue.AppendRecord(line[:0], ev)
		line = append(line, '\n')
		w.Write(line)
	}
	for i := range tasks {
		id := fmt.Sprintf("task-%07d", i)
		emit(&queue.Event{Type: queue.EventEnqueued, Task: id, MaxAttempts: 1, Manifest: manifest})
		if perTask >= 4 {
			emit(&queue.Event{Type: queue.EventStarted, Task: id, Attempt: 1, Worker: "worker-1"})
			emit(&queue.Event{Type: queue.EventTrace, Task: id, Attempt: 1, Trace: &queue.Trace{Status: execx.StatusSucceeded, DurationMS: 12, OutputBytes: 345}})
			emit(&queue.Event{Type: queue.EventSucceeded, Task: id, Attempt: 1})
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return int(seq)
}

// replay is a fresh read-only replay of the queue in dir, the reference a
// view is compared with; its backend is closed when the test ends.
func replay(tb testing.TB, dir string) *queue.Queue {
	tb.Helper()
	be, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { be.Close() })
	q, err := queue.Inspect(bg, be)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// cpuTime is this process's user+system CPU time. The figures are also
// reported as CPU time per operation because wall time on a shared machine
// measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func reportMemory(b *testing.B, q *queue.Queue) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "live-MB")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MB")
	}
	runtime.KeepAlive(q)
}

// BenchmarkReplay1M: 1,000,000 events (250,000 tasks, each enqueued,
// started, traced and succeeded) replayed to full state from a cold open.
func BenchmarkReplay1M(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "q")
	n := writeLog(b, dir, 250000, 4)
	var q *queue.Queue
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		// Each replay starts from an empty heap, as a fresh process does.
		b.StopTimer()
		q = nil
		runtime.GC()
		c := cpuTime()
		b.StartTimer()
		q = replay(b, dir)
		cpu += cpuTime() - c
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	if q.Seq() != uint64(n) {
		b.Fatalf("replayed %d events; want %d", q.Seq(), n)
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	reportMemory(b, q)
}

// BenchmarkSummary200k: status --summary's work over 200,000 tasks (each
// enqueued, started, traced and succeeded: 800,000 events), from the log and
// from a snapshot.
func BenchmarkSummary200k(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "q")
	writeLog(b, dir, 200000, 4)
	summary := func() {
		b.StopTimer()
		runtime.GC() // from an empty heap, as a fresh process
		b.StartTimer()
		// What `artq status --summary` does: open read-only, replay once.
		be, err := file.Open(dir, file.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer be.Close()
		queue.New(be).View(bg, func(st *queue.State) error {
			if s := queue.SummaryOf(st); s.Total != 200000 {
				b.Fatalf("summary %+v", s)
			}
			return nil
		})
	}
	b.Run("log", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			summary()
		}
		reportCPU(b, cpu)
	})
	be, err := file.Open(dir, file.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := queue.New(be).Compact(bg); err != nil {
		b.Fatal(err)
	}
	be.Close()
	b.Run("snapshot", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			summary()
		}
		reportCPU(b, cpu)
	})
}
