// Package goal owns the Goal journal: the one state machine that records how a
// piece of work moved through the eight canonical phases (frame, explore,
// design, plan, build, verify, review, deliver), what evidence backs each
// step, and how the work was closed.
//
// A journal is forward-only. Structural validity is necessary but not
// sufficient: the Store also owns the history, so every mutation is checked
// as a successor of the stored journal (identity and non-goals fixed, the
// phase advances by at most one, sealed receipts and timestamps never change,
// evidence and checklist items are append-only, a closed goal is immutable).
// A caller-supplied journal can therefore not produce a structurally valid
// but historically false record.
//
// The package refuses to guess: it never repairs a journal it cannot decode
// and never trusts a caller's clock for history it already holds. Task and
// event evidence is verified against an artq queue and an artobs sink when
// the Store is given Sources (package lib/evidence reads the real ones):
// the journal then records what was read there, not what the caller said,
// and refuses a task that has not finished. The package itself knows
// neither the queue nor the sink.
package goal

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/vocab"
)

// Document kinds and the license identifier the schemas carry.
const (
	Kind        = "Goal"
	KindClosure = "GoalClosure"
	// License is the SPDX identifier of the repository, locked into every
	// goal schema (x-license) by the parity tests so a distributed schema
	// always says under which terms it may be used.
	License = "Apache-2.0"
)

// Phase is one of the eight canonical phases.
type Phase string

// The canonical phases, in order.
const (
	PhaseFrame   Phase = "frame"
	PhaseExplore Phase = "explore"
	PhaseDesign  Phase = "design"
	PhasePlan    Phase = "plan"
	PhaseBuild   Phase = "build"
	PhaseVerify  Phase = "verify"
	PhaseReview  Phase = "review"
	PhaseDeliver Phase = "deliver"
)

// Phases lists every phase in order, for flags, schemas and parity tests.
var Phases = []Phase{PhaseFrame, PhaseExplore, PhaseDesign, PhasePlan, PhaseBuild, PhaseVerify, PhaseReview, PhaseDeliver}

// Index is the phase's position in Phases, or -1 for an unknown phase.
func (p Phase) Index() int {
	for i, q := range Phases {
		if p == q {
			return i
		}
	}
	return -1
}

// EvidenceType says what a piece of evidence points at.
type EvidenceType string

// Evidence types (docs/artgoal.md).
const (
	EvidenceCommand EvidenceType = "command" // argv, exit code, optional result digest
	EvidenceFile    EvidenceType = "file"    // path + sha256 computed by artgoal
	EvidenceTask    EvidenceType = "task"    // artq task id + state
	EvidenceEvent   EvidenceType = "event"   // artobs event id (sha256:…)
	EvidenceURL     EvidenceType = "url"
	EvidenceNote    EvidenceType = "note"
)

// EvidenceTypes lists every evidence type.
var EvidenceTypes = []EvidenceType{EvidenceCommand, EvidenceFile, EvidenceTask, EvidenceEvent, EvidenceURL, EvidenceNote}

// TaskState is the state of an artq task named by task evidence: the
// queue's own type (lib/vocab), so the two cannot disagree on the states or on which
// are terminal (TaskState.Terminal: succeeded, failed or cancelled; only a
// finished task is verified evidence).
type TaskState = vocab.TaskState

// TaskStates are artq's task states (vocab.States). A journal may hold any
// of them (older journals recorded what the caller observed); evidence
// verified against a queue (Store.Sources) is always Terminal.
var TaskStates = vocab.States

// DebtKind classifies remaining debt in a closure.
type DebtKind string

// DebtKinds lists every debt kind.
var DebtKinds = []DebtKind{"code", "test", "docs", "design", "ops", "security", "performance"}

// Severity grades a remaining risk in a closure.
type Severity string

// Severities lists every risk severity, lowest first.
var Severities = []Severity{"low", "medium", "high"}

// Journal is one goal's durable record, stored as DIR/goals/ID.json.
//
// A Journal shares its receipts map and evidence slices with any copy made
// by assignment: compare before/after states through Clone, never through
// a plain copy.
type Journal struct {
	jsonx.TypeMeta
	ID        string          `json:"id"`
	Title     string          `json:"title"`
	CreatedAt time.Time       `json:"created_at"`
	NonGoals  []string        `json:"non_goals"`
	Checklist []ChecklistItem `json:"checklist"`
	// Phase is the current phase: the first one without a receipt, or
	// deliver once every phase is sealed (there is no ninth phase; a
	// sealed deliver is shown by its receipt, and the next step is closure).
	Phase     Phase     `json:"phase"`
	Receipts  Receipts  `json:"receipts"`
	Revision  int64     `json:"revision"`
	UpdatedAt time.Time `json:"updated_at"`
	Closure   *Closure  `json:"closure,omitempty"`
}

// DocumentKind implements jsonx.Document.
func (*Journal) DocumentKind() string { return Kind }

// ChecklistItem is one acceptance criterion of the living checklist,
// addressed by its 0-based index or its id.
type ChecklistItem struct {
	ID       string     `json:"id"`
	Text     string     `json:"text"`
	Evidence []Evidence `json:"evidence"`
}

// Receipt seals one phase: what was done and what shows it.
type Receipt struct {
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	SealedAt time.Time  `json:"sealed_at"`
}

// Receipts are keyed by phase. They encode in phase order, not alphabetical
// order, so a journal reads top to bottom as its history.
type Receipts map[Phase]Receipt

// MarshalJSON writes the receipts in canonical phase order. Keys that are
// not phases (refused by Validate, so never stored) follow in sorted order
// so that nothing is silently dropped.
func (r Receipts) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	write := func(p Phase, rc Receipt) error {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, err := json.Marshal(string(p))
		if err != nil {
			return err
		}
		v, err := jsonx.Marshal(rc)
		if err != nil {
			return err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
		return nil
	}
	for _, p := range Phases {
		if rc, ok := r[p]; ok {
			if err := write(p, rc); err != nil {
				return nil, err
			}
		}
	}
	var other []string
	for p := range r {
		if p.Index() < 0 {
			other = append(other, string(p))
		}
	}
	sort.Strings(other)
	for _, p := range other {
		if err := write(Phase(p), r[Phase(p)]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Evidence is one typed pointer at something that shows work was done. Only
// the fields of its type are set (Validate refuses the others); Note is a
// free comment allowed on every type.
type Evidence struct {
	Type EvidenceType `json:"type"`
	// command: the words run and how they ended; Path/Digest optionally name
	// a result or output file whose sha256 artgoal computed.
	Argv     []string `json:"argv,omitempty"`
	ExitCode *int     `json:"exit_code,omitempty"`
	// file (required) and command (optional): the path as the caller gave
	// it and "sha256:<hex>" of its bytes when recorded.
	Path   string `json:"path,omitempty"`
	Digest string `json:"digest,omitempty"`
	// task: an artq task id and its state. FromQueue, when present, is
	// what artgoal read from the queue when it recorded the evidence (the
	// state is then the queue's, not the caller's word).
	Task      string      `json:"task,omitempty"`
	State     TaskState   `json:"state,omitempty"`
	FromQueue *QueueCheck `json:"from_queue,omitempty"`
	// event: an artobs event id, "sha256:<hex>". FromSink, when present, is
	// the verified record artgoal found in an artobs sink.
	Event    string     `json:"event,omitempty"`
	FromSink *SinkCheck `json:"from_sink,omitempty"`
	URL      string     `json:"url,omitempty"`
	// note: the text of the note itself.
	Text       string    `json:"text,omitempty"`
	Note       string    `json:"note,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// QueueCheck is what artgoal read from an artq queue when it recorded task
// evidence: where, at which point of the queue's log, and what the task had
// been through. It turns "the caller says task X succeeded" into "the queue
// in DIR said so at log sequence N".
type QueueCheck struct {
	// Dir is the queue's directory, absolute.
	Dir string `json:"dir"`
	// Seq is the sequence of the last event of the queue's log when the
	// state was read: the state is the replay of events 1..Seq.
	Seq uint64 `json:"seq"`
	// Attempts is how many attempts the task had started.
	Attempts int `json:"attempts"`
	// UpdatedAt is when the task entered its state (the queue's clock).
	UpdatedAt time.Time `json:"updated_at"`
}

// SinkCheck is the artobs record artgoal found, verified (its id is the
// hash of its content), when it recorded event evidence.
type SinkCheck struct {
	// Path is the JSONL sink, absolute; Line the record's 1-based line.
	Path string `json:"path"`
	Line int    `json:"line"`
	// Subject, Type, Seq and Time are the event's own header.
	Subject string    `json:"subject"`
	Type    string    `json:"type"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
}

// ClosureBody is what a closure says, shared by the stored Closure and the
// GoalClosure document a caller writes.
type ClosureBody struct {
	// Outcome is what was actually achieved.
	Outcome string `json:"outcome"`
	// Cleanup lists what was cleaned up ([] when nothing was needed: the
	// field must be present so that "nothing" is said, not forgotten).
	Cleanup []string `json:"cleanup"`
	// Debt and Risks are what remains, typed; [] says "none".
	Debt  []Debt `json:"debt"`
	Risks []Risk `json:"risks"`
	// Next is the work that follows, optionally as goal ids.
	Next []NextWork `json:"next"`
}

// Closure is the stored closure of a goal; once present the goal is
// immutable.
type Closure struct {
	ClosureBody
	ClosedAt time.Time `json:"closed_at"`
}

// ClosureDocument is the GoalClosure document read by `artgoal close
// --closure FILE`. It carries no timestamp: the store stamps closed_at.
type ClosureDocument struct {
	jsonx.TypeMeta
	ClosureBody
}

// DocumentKind implements jsonx.Document.
func (*ClosureDocument) DocumentKind() string { return KindClosure }

// Debt is one piece of remaining debt.
type Debt struct {
	Kind DebtKind `json:"kind"`
	Text string   `json:"text"`
}

// Risk is one remaining risk.
type Risk struct {
	Severity   Severity `json:"severity"`
	Text       string   `json:"text"`
	Mitigation string   `json:"mitigation,omitempty"`
}

// NextWork is one piece of follow-up work.
type NextWork struct {
	Title string `json:"title"`
	// Goal is the id of the goal that carries it, when there is one.
	Goal string `json:"goal,omitempty"`
}

// Default turns absent lists into empty ones so that a stored journal always
// spells its empty history as [] and {}, never null. It leaves the closure
// alone: a closure must say "none" itself.
func (j *Journal) Default() {
	if j.NonGoals == nil {
		j.NonGoals = []string{}
	}
	if j.Checklist == nil {
		j.Checklist = []ChecklistItem{}
	}
	for i := range j.Checklist {
		if j.Checklist[i].Evidence == nil {
			j.Checklist[i].Evidence = []Evidence{}
		}
	}
	if j.Receipts == nil {
		j.Receipts = Receipts{}
	}
	for p, r := range j.Receipts {
		if r.Evidence == nil {
			r.Evidence = []Evidence{}
			j.Receipts[p] = r
		}
	}
}

// Sealed reports whether phase p has a receipt.
func (j *Journal) Sealed(p Phase) bool {
	_, ok := j.Receipts[p]
	return ok
}

// AllSealed reports whether every phase has a receipt.
func (j *Journal) AllSealed() bool {
	for _, p := range Phases {
		if !j.Sealed(p) {
			return false
		}
	}
	return true
}

// Closed reports whether the goal has a closure and is therefore immutable.
func (j *Journal) Closed() bool { return j.Closure != nil }

// Marshal is the journal's canonical bytes, exactly what the store writes
// and `artgoal show` prints: two-space indented JSON with a trailing
// newline, fields in declaration order, receipts in phase order.
func (j *Journal) Marshal() ([]byte, error) { return jsonx.MarshalIndent(j) }
