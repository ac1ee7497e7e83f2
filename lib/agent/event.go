package agent

import (
	"fmt"
	"io"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/workspace"
)

// KindEvent is the kind of the loop's output records.
const KindEvent = "AgentEvent"

// EventType says which of the loop's moments an event records.
type EventType string

// Event types (docs/artagent.md). Each step emits step, then exactly one of
// observation, rejected, verify or truncated (a finish that is accepted
// emits none); the run ends with one result.
const (
	EventStep        EventType = "step"
	EventObservation EventType = "observation"
	EventRejected    EventType = "rejected"
	EventVerify      EventType = "verify"
	EventResult      EventType = "result"
	// EventTruncated is a step whose reply the provider cut off at its
	// token limit: nothing was acted on, and the model is told.
	EventTruncated EventType = "truncated"
)

// EventTypes lists every event type, for schemas and parity tests.
var EventTypes = []EventType{EventStep, EventObservation, EventRejected, EventVerify, EventResult, EventTruncated}

// Refusal says why a decision was rejected.
type Refusal string

// Refusals: each is returned to the model as an observation and counts as a
// step.
const (
	RefusalFormat  Refusal = "format"  // the reply did not decode as a decision
	RefusalProgram Refusal = "program" // not allowed, not found, not executable, or a path
	RefusalPath    Refusal = "path"    // absolute, "..", or escaping the workspace
	RefusalFile    Refusal = "file"    // missing, not regular, too large, a symlink
	RefusalMatch   Refusal = "match"   // old text empty, absent or not unique
	RefusalChanged Refusal = "changed" // the file changed during the edit
	RefusalDebt    Refusal = "debt"    // finish with verification debt open
	RefusalInvalid Refusal = "invalid" // the runner refused the request as invalid
	RefusalTool    Refusal = "tool"    // the model used its CLI's own tools, which were denied
)

// Refusals lists every refusal, for schemas and parity tests.
var Refusals = []Refusal{RefusalFormat, RefusalProgram, RefusalPath, RefusalFile, RefusalMatch, RefusalChanged, RefusalDebt, RefusalInvalid, RefusalTool}

// Event is one AgentEvent line. Fields are set by type: step (action,
// decision or reply, request_hash, usage, latency_ms), observation /
// rejected / verify (observation, elided, refusal, exit_code, passed, edit,
// debt), result (status, steps, edits, verified, debt, usage, latency_ms,
// summary, error).
type Event struct {
	jsonx.TypeMeta
	Type EventType `json:"type"`
	Time time.Time `json:"time"`
	Step int       `json:"step,omitempty"`

	Action      provider.Action    `json:"action,omitempty"`
	Decision    *provider.Decision `json:"decision,omitempty"`
	Reply       *string            `json:"reply,omitempty"` // only when the reply did not decode
	RequestHash string             `json:"request_hash,omitempty"`
	// Retries are the failed provider attempts before this step's reply
	// (or, on a result, before the provider gave up).
	Retries []provider.Attempt `json:"retries,omitempty"`
	// Notes are the provider's notes on the step's reply (context fitted
	// to the server's, a silently truncated prompt sent again, a token
	// limit ignored).
	Notes []string `json:"notes,omitempty"`

	Observation *string         `json:"observation,omitempty"`
	Elided      int64           `json:"elided,omitempty"`
	Refusal     Refusal         `json:"refusal,omitempty"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Passed      *bool           `json:"passed,omitempty"`
	Edit        *workspace.Edit `json:"edit,omitempty"`
	Debt        *bool           `json:"debt,omitempty"`

	Usage     *provider.Usage `json:"usage,omitempty"`
	LatencyMS *int64          `json:"latency_ms,omitempty"`

	Status   Status `json:"status,omitempty"`
	Steps    *int   `json:"steps,omitempty"`
	Edits    *int   `json:"edits,omitempty"`
	Verified *bool  `json:"verified,omitempty"`
	Summary  string `json:"summary,omitempty"`
	Error    string `json:"error,omitempty"`
}

func newEvent(t EventType, step int) *Event {
	return &Event{TypeMeta: jsonx.Meta(KindEvent), Type: t, Time: time.Now().UTC(), Step: step}
}

// ResultEvent is the final event of a run.
func ResultEvent(r *Result) *Event {
	e := newEvent(EventResult, 0)
	e.Status = r.Status
	e.Steps, e.Edits = ptr(r.Steps), ptr(r.Edits)
	e.Verified, e.Debt = ptr(r.Verified), ptr(r.Debt)
	e.Usage = r.Usage
	e.LatencyMS = ptr(r.Latency.Milliseconds())
	e.Summary = r.Summary
	if r.Err != nil {
		e.Error = r.Err.Error()
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// emitter writes events as JSON Lines and remembers the first failure: a
// broken stdout does not stop the run (its transcript and edits matter
// more), but the run then reports the failure.
type emitter struct {
	w       io.Writer
	observe func(*Event)
	err     error
}

func (e *emitter) emit(ev *Event) {
	if e.observe != nil {
		e.observe(ev)
	}
	if e.w == nil || e.err != nil {
		return
	}
	b, err := jsonx.Marshal(ev)
	if err == nil {
		_, err = e.w.Write(append(b, '\n'))
	}
	if err != nil {
		e.err = fmt.Errorf("write events: %w", err)
	}
}

// Truncate cuts s to at most max bytes by keeping its head and its tail
// around a marker that says how many bytes were elided; it returns the
// result and that count (see provider.HeadTail, which it is). Callers
// enforce MinObservationBytes.
func Truncate(s string, max int) (string, int64) { return provider.HeadTail(s, max) }
