package goal

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// New builds the genesis journal of a goal: revision 1, the first phase, no
// receipts and no evidence. Checklist items get the ids c0, c1, … so that
// "--item 1" and "--item c1" name the same item.
func New(id, title string, nonGoals, checks []string, now time.Time) (*Journal, error) {
	if err := CheckID("goal id", id); err != nil {
		return nil, err
	}
	now = now.UTC()
	j := &Journal{
		TypeMeta:  jsonx.Meta(Kind),
		ID:        id,
		Title:     title,
		CreatedAt: now,
		NonGoals:  append([]string{}, nonGoals...),
		Checklist: make([]ChecklistItem, len(checks)),
		Phase:     Phases[0],
		Receipts:  Receipts{},
		Revision:  1,
		UpdatedAt: now,
	}
	for i, text := range checks {
		j.Checklist[i] = ChecklistItem{ID: fmt.Sprintf("c%d", i), Text: text, Evidence: []Evidence{}}
	}
	if err := CheckGenesis(j); err != nil {
		return nil, err
	}
	return j, nil
}

// Item finds a checklist item by its 0-based index or its id (item ids are
// never all digits, so the two cannot be confused).
func (j *Journal) Item(key string) (int, error) {
	if isDigits(key) {
		i, err := strconv.Atoi(key)
		if err == nil && i < len(j.Checklist) {
			return i, nil
		}
	} else {
		for i, it := range j.Checklist {
			if it.ID == key {
				return i, nil
			}
		}
	}
	n := fmt.Sprintf("%d items", len(j.Checklist))
	if len(j.Checklist) == 1 {
		n = "1 item"
	}
	return -1, fmt.Errorf("no checklist item %q (the checklist has %s): %w", key, n, ErrNotFound)
}

// AddEvidence appends evidence to a checklist item. The evidence's
// RecordedAt may be zero: the store stamps it.
func (j *Journal) AddEvidence(item string, e Evidence) error {
	i, err := j.Item(item)
	if err != nil {
		return err
	}
	j.Checklist[i].Evidence = append(j.Checklist[i].Evidence, e.Clone())
	return nil
}

// Seal records the receipt of the current phase and advances to the next.
// Sealing deliver leaves the phase at deliver: there is no ninth phase, and
// the only step left is closure. Sealing twice is ErrIllegal (exit 3). The
// store stamps sealed_at and the evidence times.
func (j *Journal) Seal(summary string, evidence []Evidence) error {
	if j.Sealed(j.Phase) {
		return illegal(RuleSealed, "all %d phases of goal %s are sealed; what is left is closure", len(Phases), j.ID)
	}
	if why := paragraphProblem(summary); why != "" {
		return jsonx.Errorf("receipt.summary", "%s", why)
	}
	if len(evidence) == 0 {
		return jsonx.Errorf("receipt.evidence", "a receipt needs at least one piece of evidence")
	}
	r := Receipt{Summary: summary, Evidence: cloneEvidence(evidence)}
	if j.Receipts == nil {
		j.Receipts = Receipts{}
	}
	j.Receipts[j.Phase] = r
	if i := j.Phase.Index(); i < len(Phases)-1 {
		j.Phase = Phases[i+1]
	}
	return nil
}

// Close records the closure. It is refused (ErrIllegal, exit 3) unless all
// eight phases are sealed and every checklist item has evidence; the store
// stamps closed_at.
func (j *Journal) Close(doc *ClosureDocument) error {
	if err := closable(j); err != nil {
		return err
	}
	if err := doc.Validate(); err != nil {
		return err
	}
	b := doc.ClosureBody
	b.Cleanup = slices.Clone(b.Cleanup)
	b.Debt = slices.Clone(b.Debt)
	b.Risks = slices.Clone(b.Risks)
	b.Next = slices.Clone(b.Next)
	j.Closure = &Closure{ClosureBody: b}
	return nil
}

// Replace makes j the caller-supplied successor doc (`artgoal put`): doc
// names the revision it was derived from, which must be j's, and keeps j's
// updated_at or leaves it out (ErrIllegal, rule put-revision, otherwise).
// Whether doc is a legitimate successor is the store's check, as for every
// mutation.
func (j *Journal) Replace(doc *Journal) error {
	if doc.Revision != j.Revision {
		return illegal(RuleBase, "the document is revision %d, not the base revision %d it must be derived from", doc.Revision, j.Revision)
	}
	if !doc.UpdatedAt.IsZero() && !doc.UpdatedAt.Equal(j.UpdatedAt) {
		return illegal(RuleBase, "the document's updated_at %s is not the base revision's %s", stamp(doc.UpdatedAt), stamp(j.UpdatedAt))
	}
	*j = *doc.Clone()
	return nil
}

// stampNew fills every zero timestamp of an entry that next holds and prev
// does not (new evidence, a new receipt, a new closure) with now. Entries
// prev already holds keep their times; CheckSuccessor refuses any change.
func stampNew(prev, next *Journal, now time.Time) {
	fill := func(t *time.Time) {
		if t.IsZero() {
			*t = now
		}
	}
	_ = eachNewEvidence(prev, next, func(_ string, e *Evidence) error {
		fill(&e.RecordedAt)
		return nil
	})
	for p, r := range next.Receipts {
		if _, ok := prev.Receipts[p]; !ok {
			fill(&r.SealedAt)
			next.Receipts[p] = r
		}
	}
	if next.Closure != nil && prev.Closure == nil {
		fill(&next.Closure.ClosedAt)
	}
}

// AppendedEvidence is the evidence next holds past the end of prev's lists
// (what a step from prev to next appended), in journal order. Observers use
// it to say what a step added without re-reading the journal.
func AppendedEvidence(prev, next *Journal) []Evidence {
	var out []Evidence
	_ = eachNewEvidence(prev, next, func(_ string, e *Evidence) error {
		out = append(out, e.Clone())
		return nil
	})
	return out
}

// eachNewEvidence calls fn, in journal order (checklist, then receipts in
// phase order), with the path and a pointer into next of every piece of
// evidence past the end of prev's list at the same place: what this step
// appends. A list that lost entries has appended nothing (CheckSuccessor
// refuses it). It stops at the first error.
func eachNewEvidence(prev, next *Journal, fn func(path string, e *Evidence) error) error {
	each := func(path string, evs []Evidence, from int) error {
		for k := from; k < len(evs); k++ {
			if err := fn(index(path, k), &evs[k]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range next.Checklist {
		from := 0
		if i < len(prev.Checklist) {
			from = len(prev.Checklist[i].Evidence)
		}
		if err := each(index("checklist", i)+".evidence", next.Checklist[i].Evidence, from); err != nil {
			return err
		}
	}
	for _, p := range Phases {
		r, ok := next.Receipts[p]
		if !ok {
			continue
		}
		from := 0
		if pr, ok := prev.Receipts[p]; ok {
			from = len(pr.Evidence)
		}
		// r.Evidence shares its array with next.Receipts[p].
		if err := each("receipts."+string(p)+".evidence", r.Evidence, from); err != nil {
			return err
		}
	}
	return nil
}
