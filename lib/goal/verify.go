package goal

import (
	"fmt"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// Sources answer what task and event evidence names: an artq queue and an
// artobs sink. lib/goal knows neither; package lib/evidence implements
// Sources over them, and tests use fakes. Both methods only read.
type Sources interface {
	// Task returns the task's state and where and when it was read. An
	// unknown task is an error with exit 4.
	Task(id string) (TaskState, QueueCheck, error)
	// Event returns the verified record of an event. An unknown event is
	// an error with exit 4; a record that does not verify, exit 125.
	Event(id string) (SinkCheck, error)
}

// Refusals of evidence that its source contradicts (exit 3).
var (
	// ErrUnfinished: the task has not finished, so its outcome is no
	// evidence of anything yet.
	ErrUnfinished = exitcode.Sentinel(exitcode.Conflict, "task not finished: only a succeeded, failed or cancelled task is evidence")
	// ErrStateMismatch: the caller named a state the queue does not hold.
	ErrStateMismatch = exitcode.Sentinel(exitcode.Conflict, "state differs from the queue's")
)

// VerifyEvidence checks task and event evidence against src and records in
// e what was read (FromQueue, FromSink), replacing anything the caller put
// there: what a journal says was verified is what artgoal itself read.
// Other evidence types are left alone.
//
// Task evidence takes its state from the queue. A task that has not
// finished is refused (ErrUnfinished), and so is a caller-given state that
// is not the queue's (ErrStateMismatch): both exit 3. Event evidence must
// name a record of the sink whose id recomputes. Errors from src (not
// found: 4; corrupt: 125; bad id: 2) are returned as they are.
func VerifyEvidence(e *Evidence, src Sources) error {
	switch e.Type {
	case EvidenceTask:
		state, qc, err := src.Task(e.Task)
		if err != nil {
			return err
		}
		if !state.Terminal() {
			return exitcode.WithHint(fmt.Errorf("task %s is %s in queue %s: %w", e.Task, state, qc.Dir, ErrUnfinished),
				"record it once it has finished; 'artq status %s --watch' waits for that", e.Task)
		}
		if e.State != "" && e.State != state {
			return fmt.Errorf("task %s: given as %s, but the queue %s holds it %s: %w", e.Task, e.State, qc.Dir, state, ErrStateMismatch)
		}
		e.State, e.FromQueue = state, &qc
	case EvidenceEvent:
		sc, err := src.Event(e.Event)
		if err != nil {
			return err
		}
		e.FromSink = &sc
	}
	return nil
}

// validateUnverified checks the shape of task or event evidence before its
// source is asked: a task may come without its state (the queue gives it),
// and any from_queue or from_sink the caller wrote is ignored (verification
// replaces it).
func (e *Evidence) validateUnverified(path string) error {
	c := *e
	c.FromQueue, c.FromSink = nil, nil
	if c.Type == EvidenceTask && c.State == "" {
		c.State = "succeeded"
	}
	return c.validate(path)
}

// needsSource reports whether e is checked against Sources.
func needsSource(e *Evidence) bool { return e.Type == EvidenceTask || e.Type == EvidenceEvent }

// describe is a short form of evidence for messages.
func describe(e *Evidence) string {
	switch e.Type {
	case EvidenceTask:
		return "task:" + e.Task
	case EvidenceEvent:
		return "event:" + e.Event
	}
	return strings.TrimSpace(string(e.Type))
}
