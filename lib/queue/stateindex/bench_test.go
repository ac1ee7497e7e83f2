package stateindex

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// benchQueue is a queue of n queued tasks with an index and a one-event
// tail (scripts/bench-status.sh measures whole processes).
func benchQueue(b *testing.B, n int) string {
	dir := b.TempDir()
	fb, err := file.Open(dir, file.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fb.Close()
	ps := make([]queue.Proposal, n)
	for i := range ps {
		ps[i] = queue.Proposal{Any: true, Event: &queue.Event{Type: queue.EventEnqueued, Task: fmt.Sprintf("t%07d", i), MaxAttempts: 1,
			Manifest: []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true","args":["x"]}`)}}
	}
	if _, err := fb.Append(bg, ps); err != nil {
		b.Fatal(err)
	}
	q := queue.New(fb)
	if err := WriteQueue(bg, q); err != nil {
		b.Fatal(err)
	}
	late := *ps[0].Event
	late.Task, late.Seq = "late", 0
	if _, err := fb.Append(bg, []queue.Proposal{{Any: true, Event: &late}}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// openFile opens the queue in dir, closed when the benchmark ends.
func openFile(b *testing.B, dir string, opts file.Options) *file.Backend {
	b.Helper()
	fb, err := file.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fb.Close() })
	return fb
}

func BenchmarkSummary(b *testing.B) {
	dir := benchQueue(b, 200000)
	b.ReportAllocs()
	for b.Loop() {
		v, err := Load(bg, dir)
		if err != nil {
			b.Fatal(err)
		}
		_ = v.Summary()
		v.Close()
	}
}

func BenchmarkTask(b *testing.B) {
	dir := benchQueue(b, 200000)
	b.ReportAllocs()
	for b.Loop() {
		v, err := Load(bg, dir)
		if err != nil {
			b.Fatal(err)
		}
		if t, _, err := v.Task("t0100000"); err != nil || t == nil {
			b.Fatal(err)
		}
		v.Close()
	}
}

func BenchmarkStateHead(b *testing.B) {
	dir := benchQueue(b, 200000)
	b.ReportAllocs()
	for b.Loop() {
		v, err := Load(bg, dir)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		err = v.Tasks(queue.StateQueued, func(t *queue.Task, program string) error {
			if n++; n == 10 {
				return io.EOF
			}
			return nil
		})
		if err != io.EOF {
			b.Fatal(err)
		}
		v.Close()
	}
}

func BenchmarkBuild(b *testing.B) {
	dir := benchQueue(b, 200000)
	q, err := queue.Inspect(bg, openFile(b, dir, file.Options{ReadOnly: true}))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildQueue(bg, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefresh is a worker's periodic rewrite: the index of 200,000
// tasks plus a tail, from the index and the tail (no replay).
func BenchmarkRefresh(b *testing.B) {
	dir := benchQueue(b, 200000)
	fb := openFile(b, dir, file.Options{})
	saved, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := os.WriteFile(filepath.Join(dir, FileName), saved, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := Refresh(bg, fb, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummaryLongTail is status --summary with the index as far
// behind as a worker lets it fall (TailMin events, each a distinct task).
func BenchmarkSummaryLongTail(b *testing.B) {
	dir := benchQueue(b, 200000)
	fb := openFile(b, dir, file.Options{})
	ps := make([]queue.Proposal, TailMin)
	for i := range ps {
		ps[i] = queue.Proposal{Any: true, Event: &queue.Event{Type: queue.EventStarted, Task: fmt.Sprintf("t%07d", i*7), Attempt: 1, Worker: "w"}}
	}
	if _, err := fb.Append(bg, ps); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := Load(bg, dir)
		if err != nil {
			b.Fatal(err)
		}
		if s := v.Summary(); s.Running != TailMin {
			b.Fatalf("%+v", s)
		}
		v.Close()
	}
}
