package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/worker"
)

// BenchmarkDrainFsyncs: one worker drains 100 `true` tasks at concurrency
// 1 and 8 and reports the log's fdatasyncs per task, counted by the
// backend (an strace count would slow every syscall and so change how
// commits overlap). Each task's started, trace and terminal event are
// synced before they take effect; at concurrency 8 the appends of
// different tasks share commits.
//
//	go test -run '^$' -bench DrainFsyncs -benchtime 3x ./lib/queue/worker/
func BenchmarkDrainFsyncs(b *testing.B) {
	const tasks = 100
	task, err := queue.ArgvTask([]string{"true"})
	if err != nil {
		b.Fatal(err)
	}
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			var syncs uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				root := b.TempDir()
				ws := filepath.Join(root, "ws")
				os.Mkdir(ws, 0o700)
				be, err := file.Open(filepath.Join(root, "q"), file.Options{})
				if err != nil {
					b.Fatal(err)
				}
				q := queue.New(be)
				reqs := make([]queue.EnqueueRequest, tasks)
				for k := range reqs {
					reqs[k] = queue.EnqueueRequest{Task: task, MaxAttempts: 1}
				}
				if _, err := q.Enqueue(bg, reqs); err != nil {
					b.Fatal(err)
				}
				pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: ws})
				if err != nil {
					b.Fatal(err)
				}
				before := be.Syncs()
				b.StartTimer()
				st, err := worker.Work(bg, q, worker.Config{Policy: pol, Concurrency: conc, Mode: worker.Drain})
				b.StopTimer()
				if err != nil || st.Succeeded != tasks {
					b.Fatalf("drain: %+v, %v", st, err)
				}
				syncs += be.Syncs() - before
				be.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(syncs)/float64(tasks*b.N), "fsyncs/task")
			b.ReportMetric(float64(tasks*b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
