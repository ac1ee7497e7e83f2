package goal

import (
	"fmt"

	"github.com/art-runtime/art/lib/exitcode"
)

// Sentinels callers test with errors.Is. Each carries its README.md, "Exit codes" exit
// code; the errors the package returns wrap them with the goal id and why.
var (
	// ErrNotFound: no such goal, checklist item or evidence file (exit 4).
	ErrNotFound = exitcode.Sentinel(exitcode.NotFound, "not found")
	// ErrExists: a goal with this id already exists (exit 3).
	ErrExists = exitcode.Sentinel(exitcode.Conflict, "already exists")
	// ErrStale: the caller's --rev is not the stored revision (exit 3).
	ErrStale = exitcode.Sentinel(exitcode.Conflict, "stale revision")
	// ErrClosed: the goal has a closure and refuses every mutation (exit 3).
	ErrClosed = exitcode.Sentinel(exitcode.Conflict, "goal is closed")
	// ErrIllegal: the result is not a legitimate successor of the stored
	// journal, or the transition is not allowed in this state (exit 3).
	ErrIllegal = exitcode.Sentinel(exitcode.Conflict, "illegal transition")
	// ErrCorrupt: the stored journal cannot be decoded or is inconsistent
	// (exit 125: the durable state is damaged, not the caller's input).
	ErrCorrupt = exitcode.Sentinel(exitcode.Internal, "corrupt journal")
)

// Successor rules, named in every refusal so that a caller knows which part
// of the history their change would have falsified.
const (
	RuleIdentity   = "identity"     // apiVersion, kind, id, title, created_at never change
	RuleNonGoals   = "non-goals"    // the non-goals are fixed at creation
	RuleRevision   = "revision"     // each step is exactly the next revision
	RuleClosed     = "closed"       // a closed goal is immutable
	RulePhase      = "phase"        // the phase advances by at most one
	RuleReceipts   = "receipts"     // sealed summaries and seal times never change
	RuleEvidence   = "evidence"     // evidence is append-only
	RuleChecklist  = "checklist"    // items are append-only; id and text never change
	RuleTimestamps = "timestamps"   // history is never backdated
	RuleClosure    = "closure"      // closure needs every receipt and evidenced item, alone
	RuleGenesis    = "genesis"      // creation accepts only a genesis journal
	RuleSealed     = "all-sealed"   // nothing left to seal after deliver
	RuleBase       = "put-revision" // a put document names the revision it was derived from
)

// SuccessorError is a refused transition: the rule it breaks and where.
type SuccessorError struct {
	Rule string
	Msg  string
}

func (e *SuccessorError) Error() string {
	return fmt.Sprintf("illegal transition (%s): %s", e.Rule, e.Msg)
}

// Unwrap makes every refusal errors.Is(err, ErrIllegal), exit 3.
func (e *SuccessorError) Unwrap() error { return ErrIllegal }

func illegal(rule, format string, args ...any) error {
	return &SuccessorError{Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// RevisionError is a stale revision: the change was based on Given, the
// journal is at Revision.
type RevisionError struct {
	ID       string
	Given    int64
	Revision int64
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("goal %s: stale revision %d (the stored revision is %d)", e.ID, e.Given, e.Revision)
}

// Unwrap makes it errors.Is(err, ErrStale), exit 3.
func (e *RevisionError) Unwrap() error { return ErrStale }

// Hint tells the caller how to recover.
func (e *RevisionError) Hint() string { return e.RenderHint(nil) }

// RenderHint is Hint with the revision a change is based on (the field
// "Rev" of Store.Update's callers) named by name: the CLI's flag.
func (e *RevisionError) RenderHint(name func(field string) string) string {
	if name == nil {
		name = exitcode.Label
	}
	return fmt.Sprintf("re-read the goal (artgoal show %s) and retry with %s %d if your change still applies", e.ID, name("Rev"), e.Revision)
}
