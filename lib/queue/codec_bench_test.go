package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

// codecEvents are the events of one task's life as the worker writes them,
// with a manifest whose strings need escapes.
func codecEvents() []*queue.Event {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 123456789, time.UTC)
	manifest := []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"task-0000001","program":"sh","args":["-c","printf '%s\n' \"$X\" | tee out.txt"],"dir":"."}`)
	return []*queue.Event{
		{Seq: 1, Time: t0, Type: queue.EventEnqueued, Task: "task-0000001", MaxAttempts: 3, Manifest: manifest},
		{Seq: 2, Time: t0, Type: queue.EventStarted, Task: "task-0000001", Attempt: 1, Worker: "worker-1"},
		{Seq: 3, Time: t0, Type: queue.EventTrace, Task: "task-0000001", Attempt: 1, Claim: 2, Trace: &queue.Trace{Status: execx.StatusFailed, ExitCode: 2, DurationMS: 12, OutputBytes: 345, Reason: "exit status 2: \"make: *** [test] Error 1\""}},
		{Seq: 4, Time: t0, Type: queue.EventFailed, Task: "task-0000001", Attempt: 1, Claim: 2},
	}
}

// BenchmarkRecordEncode: one op encodes the four records of a task's life.
func BenchmarkRecordEncode(b *testing.B) {
	evs := codecEvents()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range evs {
			buf = queue.AppendRecord(buf[:0], ev)
		}
	}
}

// BenchmarkRecordDecode: one op decodes the four records of a task's life.
func BenchmarkRecordDecode(b *testing.B) {
	var lines [][]byte
	for _, ev := range codecEvents() {
		lines = append(lines, queue.AppendRecord(nil, ev))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			if _, err := queue.DecodeRecord(line); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSnapshotDecode: a snapshot of 10,000 finished tasks.
func BenchmarkSnapshotDecode(b *testing.B) {
	st := queue.NewState()
	seq := uint64(0)
	for i := range 10000 {
		for _, ev := range codecEvents() {
			seq++
			e := *ev
			e.Seq = seq
			e.Task = fmt.Sprintf("task-%07d", i)
			if e.Claim != 0 {
				e.Claim = seq - uint64(ev.Seq-2)
			}
			if e.Type == queue.EventEnqueued {
				e.Manifest = []byte(fmt.Sprintf(`{"apiVersion":"art/v1alpha1","kind":"Task","id":%q,"program":"sh","args":["-c","printf '%%s\n' \"$X\""]}`, e.Task))
			}
			if err := st.Apply(&e); err != nil {
				b.Fatal(err)
			}
		}
	}
	data := queue.EncodeSnapshot(st.Snapshot(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := queue.DecodeSnapshot(data); err != nil {
			b.Fatal(err)
		}
	}
}
