package obs

import (
	"context"
	"testing"
	"time"
)

// With Replay, the same timed Drafts emitted again are the same envelopes,
// which the sink holds once; a Draft that is new in a replayed stream
// continues its subject's sequence; untimed Drafts are always new.
func TestReplayIsIdempotent(t *testing.T) {
	mem := NewMemory()
	e := New(Options{Replay: true, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}, mem)
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	stream := []Draft{
		{Subject: "task/a", Type: "queue.enqueued", Time: at, Attrs: map[string]any{"seq": 1}},
		{Subject: "task/a", Type: "queue.started", Time: at.Add(time.Second), Attrs: map[string]any{"seq": 2}},
		{Subject: "task/b", Type: "queue.enqueued", Time: at.Add(2 * time.Second), Attrs: map[string]any{"seq": 3}},
	}
	ctx := context.Background()
	first := e.EmitBatch(ctx, stream)
	again := e.EmitBatch(ctx, stream)
	for i := range stream {
		if first[i].Err != nil || again[i].Err != nil {
			t.Fatalf("draft %d: %v / %v", i, first[i].Err, again[i].Err)
		}
		if first[i].Envelope.ID() != again[i].Envelope.ID() {
			t.Errorf("draft %d: id %s then %s; want the same", i, first[i].Envelope.ID(), again[i].Envelope.ID())
		}
	}
	grown := append(append([]Draft{}, stream...), Draft{Subject: "task/a", Type: "queue.succeeded", Time: at.Add(3 * time.Second), Attrs: map[string]any{"seq": 4}})
	e2 := New(Options{Replay: true}, mem) // another process, same sink
	out := e2.EmitBatch(ctx, grown)
	if got := out[3].Envelope.Seq(); got != 3 {
		t.Errorf("new draft of a replayed subject: seq %d; want 3", got)
	}
	if n := len(mem.Envelopes()); n != 4 {
		t.Errorf("sink holds %d envelopes; want 4 (3 once, 1 new)", n)
	}
	untimed := Draft{Subject: "task/c", Type: "note"}
	a, b := e2.Emit(ctx, untimed), e2.Emit(ctx, untimed)
	if a.Envelope.Seq() == b.Envelope.Seq() {
		t.Errorf("untimed drafts share seq %d; want two events", a.Envelope.Seq())
	}
}
