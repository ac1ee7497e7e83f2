package goal

import "slices"

// Clone returns a deep copy: no map, slice or pointer of the result is
// shared with j, so a mutation of the clone can never rewrite the history it
// is compared against.
func (j *Journal) Clone() *Journal {
	if j == nil {
		return nil
	}
	c := *j
	c.NonGoals = slices.Clone(j.NonGoals)
	if j.Checklist != nil {
		c.Checklist = make([]ChecklistItem, len(j.Checklist))
		for i, it := range j.Checklist {
			it.Evidence = cloneEvidence(it.Evidence)
			c.Checklist[i] = it
		}
	}
	if j.Receipts != nil {
		c.Receipts = make(Receipts, len(j.Receipts))
		for p, r := range j.Receipts {
			r.Evidence = cloneEvidence(r.Evidence)
			c.Receipts[p] = r
		}
	}
	if j.Closure != nil {
		cl := *j.Closure
		cl.Cleanup = slices.Clone(cl.Cleanup)
		cl.Debt = slices.Clone(cl.Debt)
		cl.Risks = slices.Clone(cl.Risks)
		cl.Next = slices.Clone(cl.Next)
		c.Closure = &cl
	}
	return &c
}

func cloneEvidence(evs []Evidence) []Evidence {
	if evs == nil {
		return nil
	}
	out := make([]Evidence, len(evs))
	for i, e := range evs {
		out[i] = e.Clone()
	}
	return out
}

// Clone returns a deep copy of the evidence (argv, exit code and the
// source records included).
func (e Evidence) Clone() Evidence {
	e.Argv = slices.Clone(e.Argv)
	if e.ExitCode != nil {
		c := *e.ExitCode
		e.ExitCode = &c
	}
	if e.FromQueue != nil {
		c := *e.FromQueue
		e.FromQueue = &c
	}
	if e.FromSink != nil {
		c := *e.FromSink
		e.FromSink = &c
	}
	return e
}
