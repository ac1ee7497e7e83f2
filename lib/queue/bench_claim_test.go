package queue_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// BenchmarkClaimFinish: what one task costs a long-lived worker on a log
// that already holds history (10,000 or 200,000 events of finished tasks):
// enqueue, claim, trace and finish, four fsync'd appends. Its cost must not
// grow with the log: the queue keeps its view current from its own appends
// and reads only the tail others wrote.
//
//	go test -run '^$' -bench ClaimFinish -benchmem ./lib/queue/
func BenchmarkClaimFinish(b *testing.B) {
	for _, events := range []int{10000, 200000} {
		b.Run(fmt.Sprintf("%dk", events/1000), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "q")
			writeLog(b, dir, events/4, 4)
			be, err := file.Open(dir, file.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			q, err := queue.Open(bg, be)
			if err != nil {
				b.Fatal(err)
			}
			lease, err := be.AcquireLease(bg, "bench", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			defer lease.Release()
			tr := &queue.Trace{Status: execx.StatusSucceeded, DurationMS: 1}
			// Warm up: the first conditional append builds the backend's
			// per-task index once; that is the process's start, not a task.
			claimFinish(b, q, lease, tr)
			b.ResetTimer()
			for b.Loop() {
				claimFinish(b, q, lease, tr)
			}
		})
	}
}

func claimFinish(b *testing.B, q *queue.Queue, lease queue.Lease, tr *queue.Trace) {
	enqueueOne(b, q)
	t, err := q.Claim(bg, "bench", nil)
	if err != nil || t == nil {
		b.Fatalf("claim: %v, %v", t, err)
	}
	if term, err := q.Finish(bg, lease, "bench", t, tr); err != nil || term != queue.EventSucceeded {
		b.Fatalf("finish: %v, %v", term, err)
	}
}
