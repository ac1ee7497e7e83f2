package queueobs

import (
	"testing"

	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
)

// TestWrapPresetSubject: `artq log | artobs emit --wrap queue` gives each
// task the subject, correlation and type names the worker's own events
// give it, so one task's story is one subject whoever emitted it.
func TestWrapPresetSubject(t *testing.T) {
	w, err := obs.WrapPreset("queue")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*queue.Event{
		{Seq: 1, Type: queue.EventEnqueued, Task: "fix-add", MaxAttempts: 1},
		{Seq: 2, Type: queue.EventStarted, Task: "fix-add", Attempt: 1, Worker: "w1"},
		{Seq: 3, Type: queue.EventTrace, Task: "fix-add", Attempt: 1, Trace: &queue.Trace{Status: "succeeded"}},
		{Seq: 4, Type: queue.EventSucceeded, Task: "fix-add", Attempt: 1},
	} {
		d, err := w.Draft(queue.AppendEventDoc(nil, ev))
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		want := queue.Correlation("default", ev.Task)
		if d.Subject != want || d.Correlation != want {
			t.Errorf("%s: wrapped subject %q, correlation %q; the worker's are %q", ev.Type, d.Subject, d.Correlation, want)
		}
		if typ := QueueDraft(ev).Type; d.Type != typ {
			t.Errorf("%s: wrapped type %q; the worker's is %q", ev.Type, d.Type, typ)
		}
	}
	w.Fields = map[string]any{"queue": "nightly"}
	d, err := w.Draft(queue.AppendEventDoc(nil, &queue.Event{Seq: 1, Type: queue.EventEnqueued, Task: "t"}))
	if err != nil || d.Subject != queue.Correlation("nightly", "t") {
		t.Errorf("queue nightly: subject %q, err %v", d.Subject, err)
	}
}
