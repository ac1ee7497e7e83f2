package queue

import (
	"context"
	"time"
)

// AttemptRun is one claim of a task as its log tells it: which worker
// claimed which attempt when, and how that claim ended. A task killed with
// its worker before its trace was synced is requeued under the same
// attempt number and claimed again (at-least-once): its history then
// holds two runs of that attempt, the first ended "requeued" and the
// second marked RanAgain, where the state alone says only "1 attempt".
type AttemptRun struct {
	Attempt int `json:"attempt"`
	// Claim is the claim's fencing token: the sequence of its started
	// event.
	Claim     uint64    `json:"claim"`
	ClaimedAt time.Time `json:"claimed_at"`
	Worker    string    `json:"worker"`
	// Result is how the claim ended: succeeded, failed, cancelled, or
	// requeued (its worker died before a trace); "" while it runs.
	Result  EventType  `json:"result,omitempty"`
	EndedAt *time.Time `json:"ended_at,omitempty"`
	// Status and DurationMS are the trace's, when the claim was traced.
	Status     string `json:"status,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// Reason is the trace's reason, or recovery's.
	Reason string `json:"reason,omitempty"`
	// RanAgain: this attempt had already been claimed by a worker that died
	// before tracing it, so its command ran (at least partly) twice.
	RanAgain bool `json:"ran_again,omitempty"`
}

// History collects the AttemptRuns of one task from its events, in log
// order (Add each event; others are ignored).
type History struct {
	Task string
	Runs []AttemptRun
	// From is the first sequence the history saw when earlier events were
	// compacted away (0: the whole log was read): claims before it are
	// not in Runs.
	From uint64
}

// Add applies one event of the log.
func (h *History) Add(ev *Event) {
	if ev.Task != h.Task {
		return
	}
	if ev.Type == EventStarted {
		run := AttemptRun{Attempt: ev.Attempt, Claim: ev.Seq, ClaimedAt: ev.Time, Worker: ev.Worker}
		for i := range h.Runs {
			if h.Runs[i].Attempt == ev.Attempt && h.Runs[i].Result == EventRequeued {
				run.RanAgain = true
			}
		}
		h.Runs = append(h.Runs, run)
		return
	}
	r := h.runOf(ev)
	if r == nil {
		return
	}
	switch ev.Type {
	case EventTrace:
		if ev.Trace != nil {
			r.Status, r.DurationMS, r.Reason = string(ev.Trace.Status), ev.Trace.DurationMS, ev.Trace.Reason
		}
	case EventSucceeded, EventFailed, EventCancelled, EventRequeued:
		t := ev.Time
		r.Result, r.EndedAt = ev.Type, &t
		if ev.Reason != "" {
			r.Reason = ev.Reason
		}
	}
}

// runOf is the claim an event is about: the one its Claim names, or, in a
// log written before claims, the latest one still open.
func (h *History) runOf(ev *Event) *AttemptRun {
	for i := len(h.Runs) - 1; i >= 0; i-- {
		r := &h.Runs[i]
		if ev.Claim != 0 && r.Claim == ev.Claim || ev.Claim == 0 && r.Result == "" {
			if r.Result != "" {
				return nil // a second end for one claim: the reducer refused it
			}
			return r
		}
	}
	return nil
}

// ReadHistory reads b's whole log for the history of task id. It only
// reads.
func ReadHistory(ctx context.Context, b Backend, id string) (*History, error) {
	h := &History{Task: id}
	err := Follow(ctx, b, FollowOptions{Skipped: func(_, to uint64) { h.From = to + 1 }}, func(ev *Event) error {
		h.Add(ev)
		return nil
	})
	return h, err
}
