package queue

import (
	"reflect"
	"testing"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// TestHistory: each claim is one run; a claim whose worker died before a
// trace ends requeued and the next claim of that attempt ran again; a
// stale claim's late result (refused by the reducer) does not rewrite the
// newer claim's; other tasks' events are ignored.
func TestHistory(t *testing.T) {
	h := &History{Task: "a"}
	evs := []*Event{
		{Seq: 1, Type: EventEnqueued, Task: "a"},
		{Seq: 2, Type: EventStarted, Task: "a", Attempt: 1, Worker: "w1"},
		{Seq: 3, Type: EventStarted, Task: "b", Attempt: 1, Worker: "w1"},
		{Seq: 4, Type: EventRequeued, Task: "a", Attempt: 1, Worker: "w1", Reason: "recovered: worker w1 is gone", Claim: 2},
		{Seq: 5, Type: EventStarted, Task: "a", Attempt: 1, Worker: "w2"},
		{Seq: 6, Type: EventTrace, Task: "a", Attempt: 1, Claim: 2, Trace: &Trace{Status: execx.StatusSucceeded}}, // the zombie's, refused
		{Seq: 7, Type: EventTrace, Task: "a", Attempt: 1, Claim: 5, Trace: &Trace{Status: execx.StatusFailed, DurationMS: 12, Reason: "exited with status 3"}},
		{Seq: 8, Type: EventFailed, Task: "a", Attempt: 1, Claim: 5},
		{Seq: 9, Type: EventRetried, Task: "a", Attempt: 2},
		{Seq: 10, Type: EventStarted, Task: "a", Attempt: 2, Worker: "w2"},
	}
	for _, e := range evs {
		h.Add(e)
	}
	if len(h.Runs) != 3 {
		t.Fatalf("%d runs; want 3: %+v", len(h.Runs), h.Runs)
	}
	r := h.Runs
	if r[0].Result != EventRequeued || r[0].Worker != "w1" || r[0].RanAgain || r[0].Status != "" {
		t.Errorf("run 1 = %+v; want requeued by w1, never traced", r[0])
	}
	if r[1].Result != EventFailed || !r[1].RanAgain || r[1].Status != "failed" || r[1].DurationMS != 12 || r[1].Reason != "exited with status 3" {
		t.Errorf("run 2 = %+v; want failed, ran again, its own trace", r[1])
	}
	if r[2].Attempt != 2 || r[2].Result != "" || r[2].RanAgain {
		t.Errorf("run 3 = %+v; want attempt 2 running", r[2])
	}

	ts := TaskStatus{TypeMeta: jsonx.Meta(KindTaskStatus), ID: "a", State: StateRunning, Attempts: 2, MaxAttempts: 2, Program: "sh", History: h.Runs, HistoryFrom: 1}
	data, _ := jsonx.Marshal(&ts)
	schematest.Validate(t, schematest.Compile(t, "task-status.schema.json"), "TaskStatus with history", data)
	schematest.Fields(t, schematest.Load(t, "task-status.schema.json"), "/$defs/AttemptRun", reflect.TypeFor[AttemptRun]())
}
