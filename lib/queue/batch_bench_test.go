package queue_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// The batch enqueue of 100,000 tasks at library level, fresh queue each
// time (scripts/bench-batch.sh runs these interleaved with the artq
// binary):
//
//	go test -run '^$' -bench 'Batch100k' -benchtime 3x ./lib/queue/

const batchN = 100000

// BenchmarkEnqueueBatch100k is the baseline: the library's own Enqueue of
// 100,000 already-decoded requests, one append.
func BenchmarkEnqueueBatch100k(b *testing.B) {
	reqs := make([]queue.EnqueueRequest, batchN)
	for i := range reqs {
		reqs[i] = queue.EnqueueRequest{Task: benchTask, MaxAttempts: 1}
	}
	for b.Loop() {
		q := benchQueue(b, file.Options{})
		if _, err := q.Enqueue(bg, reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batchN*b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkReadBatch100k is what `artq enqueue --batch` does in-process:
// ReadBatch of 100,000 JSON Lines manifests, then EnqueueBatch.
func BenchmarkReadBatch100k(b *testing.B) {
	line := `{"apiVersion":"art/v1alpha1","kind":"Task","program":"make","args":["-C","src","test"]}` + "\n"
	in := []byte(strings.Repeat(line, batchN))
	for b.Loop() {
		q := benchQueue(b, file.Options{})
		batch, err := queue.ReadBatch(bytes.NewReader(in), queue.BatchOptions{MaxAttempts: 1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.EnqueueBatch(bg, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batchN*b.N)/b.Elapsed().Seconds(), "tasks/s")
}
