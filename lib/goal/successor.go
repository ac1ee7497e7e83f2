package goal

import (
	"bytes"
	"slices"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// CheckGenesis accepts only a journal that could be the first record of a
// goal: revision 1, the first phase, no receipts, no evidence anywhere, no
// closure, updated_at equal to created_at. Anything else would let a caller
// create a goal with invented history. A refusal wraps ErrIllegal (exit 3);
// an invalid journal gives the validation error (exit 2).
func CheckGenesis(j *Journal) error {
	if err := j.Validate(); err != nil {
		return err
	}
	switch {
	case j.Revision != 1:
		return illegal(RuleGenesis, "revision is %d; a new goal starts at 1", j.Revision)
	case j.Phase != Phases[0]:
		return illegal(RuleGenesis, "phase is %s; a new goal starts at %s", j.Phase, Phases[0])
	case len(j.Receipts) != 0:
		return illegal(RuleGenesis, "a new goal has no receipts")
	case j.Closure != nil:
		return illegal(RuleGenesis, "a new goal has no closure")
	case !j.UpdatedAt.Equal(j.CreatedAt):
		return illegal(RuleGenesis, "updated_at differs from created_at")
	}
	for i, it := range j.Checklist {
		if len(it.Evidence) != 0 {
			return illegal(RuleGenesis, "checklist item %d (%s) has evidence; a new goal has none", i, it.ID)
		}
	}
	return nil
}

// CheckSuccessor decides whether next may follow prev. prev must be a valid
// stored journal. next is first checked against prev (exit 3, the rule
// named), so that a step which falsifies history is reported as such even
// when it is also malformed, and then whole (Validate, exit 2):
//
//   - identity (apiVersion, kind, id, title, created_at) and non-goals fixed;
//   - revision exactly prev+1, updated_at not before prev's;
//   - nothing follows a closed goal;
//   - the phase advances by at most one (Validate already ties receipts to
//     the phase, so at most one phase is sealed per step);
//   - every sealed receipt keeps its summary and sealed_at, and its
//     evidence list keeps prev's as a prefix;
//   - checklist items keep their order, id and text, new items are only
//     appended, and each item's evidence keeps prev's as a prefix;
//   - everything new (evidence, receipt, closure) is stamped no earlier than
//     prev's updated_at: history is never backdated;
//   - a closure needs all eight receipts and evidence on every item, and is
//     its own step: nothing else changes in the step that closes.
func CheckSuccessor(prev, next *Journal) error {
	if prev.Closed() {
		return illegal(RuleClosed, "goal %s was closed at %s and is immutable", prev.ID, stamp(prev.Closure.ClosedAt))
	}
	switch {
	case next.APIVersion != prev.APIVersion || next.Kind != prev.Kind:
		return illegal(RuleIdentity, "apiVersion/kind changed")
	case next.ID != prev.ID:
		return illegal(RuleIdentity, "id changed from %q to %q", prev.ID, next.ID)
	case next.Title != prev.Title:
		return illegal(RuleIdentity, "title changed from %q to %q", prev.Title, next.Title)
	case !next.CreatedAt.Equal(prev.CreatedAt):
		return illegal(RuleIdentity, "created_at changed from %s to %s", stamp(prev.CreatedAt), stamp(next.CreatedAt))
	case !slices.Equal(next.NonGoals, prev.NonGoals):
		return illegal(RuleNonGoals, "non-goals changed: they are fixed when the goal is created")
	case next.Revision != prev.Revision+1:
		return illegal(RuleRevision, "revision %d does not follow %d", next.Revision, prev.Revision)
	case next.UpdatedAt.Before(prev.UpdatedAt):
		return illegal(RuleTimestamps, "updated_at %s is before the previous %s", stamp(next.UpdatedAt), stamp(prev.UpdatedAt))
	}
	if next.Phase.Index() < 0 {
		// not a phase at all: Validate names it below (exit 2)
	} else if d := next.Phase.Index() - prev.Phase.Index(); d < 0 {
		return illegal(RulePhase, "phase moved back from %s to %s", prev.Phase, next.Phase)
	} else if d > 1 {
		return illegal(RulePhase, "phase jumped from %s to %s, skipping %s", prev.Phase, next.Phase, Phases[prev.Phase.Index()+1])
	} else if d == 1 && !next.Sealed(prev.Phase) {
		return illegal(RulePhase, "phase advanced from %s to %s without a receipt sealing %s", prev.Phase, next.Phase, prev.Phase)
	}
	since := prev.UpdatedAt
	for _, p := range Phases {
		pr, had := prev.Receipts[p]
		nr, has := next.Receipts[p]
		switch {
		case had && !has:
			return illegal(RuleReceipts, "the sealed receipt of %s was removed", p)
		case !had && has:
			if nr.SealedAt.Before(since) {
				return illegal(RuleTimestamps, "receipts.%s.sealed_at %s is before the previous revision's %s", p, stamp(nr.SealedAt), stamp(since))
			}
			if err := appended("receipts."+string(p)+".evidence", nil, nr.Evidence, since); err != nil {
				return err
			}
		case had:
			if nr.Summary != pr.Summary {
				return illegal(RuleReceipts, "the sealed summary of %s was rewritten", p)
			}
			if !nr.SealedAt.Equal(pr.SealedAt) {
				return illegal(RuleReceipts, "the seal time of %s was changed", p)
			}
			if err := appended("receipts."+string(p)+".evidence", pr.Evidence, nr.Evidence, since); err != nil {
				return err
			}
		}
	}
	if len(next.Checklist) < len(prev.Checklist) {
		return illegal(RuleChecklist, "checklist item %d (%s) was removed", len(next.Checklist), prev.Checklist[len(next.Checklist)].ID)
	}
	for i, ni := range next.Checklist {
		if i >= len(prev.Checklist) {
			if err := appended(index("checklist", i)+".evidence", nil, ni.Evidence, since); err != nil {
				return err
			}
			continue
		}
		pi := prev.Checklist[i]
		if ni.ID != pi.ID || ni.Text != pi.Text {
			return illegal(RuleChecklist, "checklist item %d (%s) was changed: items keep their id and text, new ones are appended", i, pi.ID)
		}
		if err := appended(index("checklist", i)+".evidence", pi.Evidence, ni.Evidence, since); err != nil {
			return err
		}
	}
	if next.Closure != nil {
		if err := closable(next); err != nil {
			return err
		}
		if next.Closure.ClosedAt.Before(since) {
			return illegal(RuleTimestamps, "closure.closed_at %s is before the previous revision's %s", stamp(next.Closure.ClosedAt), stamp(since))
		}
		if !sameExceptClosure(prev, next) {
			return illegal(RuleClosure, "the step that closes a goal adds only the closure; record evidence and seals first")
		}
	}
	return next.Validate()
}

// appended requires next to be prev followed by new entries stamped no
// earlier than since. Entries are compared by their canonical encoding:
// what is stored is what must not change.
func appended(path string, prev, next []Evidence, since time.Time) error {
	if len(next) < len(prev) {
		return illegal(RuleEvidence, "%s[%d] was removed: evidence is append-only", path, len(next))
	}
	for i := range prev {
		if !sameEvidence(prev[i], next[i]) {
			return illegal(RuleEvidence, "%s[%d] was changed: evidence is append-only", path, i)
		}
	}
	for i := len(prev); i < len(next); i++ {
		if next[i].RecordedAt.Before(since) {
			return illegal(RuleTimestamps, "%s[%d].recorded_at %s is before the previous revision's %s", path, i, stamp(next[i].RecordedAt), stamp(since))
		}
	}
	return nil
}

func sameEvidence(a, b Evidence) bool {
	x, err1 := jsonx.Marshal(a)
	y, err2 := jsonx.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// sameExceptClosure compares two journals ignoring revision, updated_at and
// closure.
func sameExceptClosure(prev, next *Journal) bool {
	a, b := prev.Clone(), next.Clone()
	a.Revision, a.UpdatedAt, a.Closure = 0, time.Time{}, nil
	b.Revision, b.UpdatedAt, b.Closure = 0, time.Time{}, nil
	x, err1 := jsonx.Marshal(a)
	y, err2 := jsonx.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
