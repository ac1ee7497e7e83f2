package queue

import (
	"encoding/json"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Document kinds this package writes.
const (
	KindEvent      = "QueueEvent"
	KindTaskStatus = "TaskStatus"
	KindSummary    = "QueueSummary"
	KindCheck      = "QueueCheck"
	KindSnapshot   = "QueueSnapshot"
)

// EventType names what an event records.
type EventType string

// Event types (docs/artq.md). The first nine change one task's state; the
// last two are log-level and change no task.
const (
	EventEnqueued        EventType = "enqueued"         // task, max_attempts, manifest, run (optional)
	EventStarted         EventType = "started"          // attempt, worker
	EventTrace           EventType = "trace"            // attempt, trace (metadata only)
	EventSucceeded       EventType = "succeeded"        // attempt
	EventFailed          EventType = "failed"           // attempt
	EventCancelRequested EventType = "cancel_requested" // attempt
	EventCancelled       EventType = "cancelled"        // attempt
	EventRequeued        EventType = "requeued"         // attempt (preserved), worker (the dead one), reason
	EventRetried         EventType = "retried"          // attempt (the new one)
	EventTruncated       EventType = "truncated"        // offset, bytes: a torn tail was cut by Open
	EventCompacted       EventType = "compacted"        // through: events ≤ through live in the snapshot
)

// EventTypes lists every type, for schemas and parity tests.
var EventTypes = []EventType{
	EventEnqueued, EventStarted, EventTrace, EventSucceeded, EventFailed,
	EventCancelRequested, EventCancelled, EventRequeued, EventRetried,
	EventTruncated, EventCompacted,
}

func (t EventType) known() bool {
	switch t {
	case EventEnqueued, EventStarted, EventTrace, EventSucceeded, EventFailed,
		EventCancelRequested, EventCancelled, EventRequeued, EventRetried,
		EventTruncated, EventCompacted:
		return true
	}
	return false
}

// logLevel reports whether events of this type concern the log rather than a
// task.
func (t EventType) logLevel() bool { return t == EventTruncated || t == EventCompacted }

// Event is one record of the queue's log. The log is the whole truth: every
// task's state is the replay of its events through State.Apply.
//
// Seq is assigned by the backend when the event is appended; it is the
// event's position in the queue's one total order (a JetStream stream
// sequence on the NATS backend). Time is set by the appender.
type Event struct {
	Seq         uint64          `json:"seq"`
	Time        time.Time       `json:"time"`
	Type        EventType       `json:"type"`
	Task        string          `json:"task,omitempty"`
	Attempt     int             `json:"attempt,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Worker      string          `json:"worker,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Trace       *Trace          `json:"trace,omitempty"`
	Offset      int64           `json:"offset,omitempty"`
	Bytes       int64           `json:"bytes,omitempty"`
	Through     uint64          `json:"through,omitempty"`
	Manifest    json.RawMessage `json:"manifest,omitempty"`
	// Claim is the fencing token of an event about a running attempt
	// (trace, succeeded, failed, cancel_requested, cancelled, requeued):
	// the sequence of the started event that began the attempt. The
	// reducer refuses such an event unless its claim is the task's current
	// one, so a worker that lost its lease (and whose task was requeued
	// and started again, by itself or another worker) can never record a
	// result for the newer claim. 0 only in logs written before claims.
	Claim uint64 `json:"claim,omitempty"`
	// Batch is set on every event of a multi-event append on the file
	// backend: the sequence of the append's first event; Commit marks its
	// last. A reader applies a batch's events only once it has read the
	// committing one, and a writer cuts a batch a crash left without it,
	// so a batch is applied whole or not at all (see lib/queue/file).
	Batch  uint64 `json:"batch,omitempty"`
	Commit bool   `json:"commit,omitempty"`
	// Run is the task's RunSpec (enqueued only; absent for a task that
	// asks for nothing beyond its manifest), stored as given and decoded
	// by the worker that runs the task.
	Run json.RawMessage `json:"run,omitempty"`
}

// Trace is the completed-command record of one attempt. It is metadata only:
// never argument values, never output, so a log kept for years does not keep
// the secrets a command printed or was given.
type Trace struct {
	Status           execx.Status `json:"status"`
	ExitCode         int          `json:"exit_code"`
	Signal           string       `json:"signal,omitempty"`
	DurationMS       int64        `json:"duration_ms"`
	OutputBytes      int64        `json:"output_bytes"`
	OutputTruncated  bool         `json:"output_truncated"`
	OutputIncomplete bool         `json:"output_incomplete"`
	// Reason says in one short, redacted line why the attempt did not
	// succeed (Reason); absent for a success and in logs written before it.
	Reason string `json:"reason,omitempty"`
	// OutputSaved is false when the worker was asked to keep the
	// attempt's output (--output-dir) and could not (a full disk), and
	// OutputError then says why. The attempt's result stands: an output
	// that was not saved is never a reason to run the command again. Nil
	// when nothing was asked or the output was saved.
	OutputSaved *bool  `json:"output_saved,omitempty"`
	OutputError string `json:"output_error,omitempty"`
	// Acceptance is the record of the task's acceptance command, run by
	// the worker after the command succeeded (the same metadata, never
	// nested further). With it, the attempt's outcome is the acceptance's.
	Acceptance *Trace `json:"acceptance,omitempty"`
}

// Outcome is the terminal event the trace leads to: the command's, unless
// the command succeeded and an acceptance run was recorded, whose result
// then decides. It returns "" for a status it does not know.
func (t *Trace) Outcome() EventType {
	o := Outcome(t.Status)
	if o != EventSucceeded || t.Acceptance == nil {
		return o
	}
	return Outcome(t.Acceptance.Status)
}

// TraceOf keeps the metadata of a Result and drops everything else.
func TraceOf(r *execx.Result) *Trace {
	return &Trace{
		Status:           r.Status,
		ExitCode:         r.ExitCode,
		Signal:           r.Signal,
		DurationMS:       r.DurationMS,
		OutputBytes:      r.OutputBytes,
		OutputTruncated:  r.OutputTruncated,
		OutputIncomplete: r.OutputIncomplete,
		Reason:           Reason(r),
	}
}

// Outcome is the terminal event a trace leads to: the same rule for the worker
// that ran the attempt and for recovery that finds the trace after a crash.
// It returns "" for a status it does not know.
func Outcome(status execx.Status) EventType {
	switch status {
	case execx.StatusSucceeded:
		return EventSucceeded
	case execx.StatusCancelled:
		return EventCancelled
	case execx.StatusFailed, execx.StatusTimedOut, execx.StatusRejected, execx.StatusError:
		return EventFailed
	}
	return ""
}

// EventDoc is an event as `artq log` prints it: a QueueEvent document.
type EventDoc struct {
	jsonx.TypeMeta
	Event
}
