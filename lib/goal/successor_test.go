package goal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// step is prev's successor candidate: next revision, one second later.
func step(prev *Journal) *Journal {
	n := prev.Clone()
	n.Revision++
	n.UpdatedAt = n.UpdatedAt.Add(time.Second)
	return n
}

func TestCheckSuccessor(t *testing.T) {
	s, _ := testStore(t)
	mid := stage(t, s, "mid", 4, false)   // phase build, c0 evidenced
	done := stage(t, s, "done", 8, false) // every phase sealed
	done = must[*Journal](t)(s.Check("done", done.Revision, "c1", note("docs")))
	closed := stage(t, s, "closed", 8, true)

	later := func(j *Journal) time.Time { return j.UpdatedAt }
	tests := []struct {
		name   string
		prev   *Journal
		mutate func(n *Journal)
		rule   string // "" = legitimate; "invalid" = exit 2
	}{
		{"no change but the step", mid, func(n *Journal) {}, ""},
		{"append item evidence", mid, func(n *Journal) {
			n.Checklist[1].Evidence = append(n.Checklist[1].Evidence, Evidence{Type: EvidenceNote, Text: "x", RecordedAt: later(n)})
		}, ""},
		{"append checklist item", mid, func(n *Journal) {
			n.Checklist = append(n.Checklist, ChecklistItem{ID: "perf", Text: "fast", Evidence: []Evidence{}})
		}, ""},
		{"seal current phase", mid, func(n *Journal) {
			n.Receipts[PhaseBuild] = Receipt{Summary: "built", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: later(n)}}, SealedAt: later(n)}
			n.Phase = PhaseVerify
		}, ""},
		{"append evidence to a sealed receipt", mid, func(n *Journal) {
			r := n.Receipts[PhaseFrame]
			r.Evidence = append(r.Evidence, Evidence{Type: EvidenceURL, URL: "https://x.example/1", RecordedAt: later(n)})
			n.Receipts[PhaseFrame] = r
		}, ""},
		{"close", done, func(n *Journal) {
			n.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: later(n)}
		}, ""},

		{"change title", mid, func(n *Journal) { n.Title = "Another" }, RuleIdentity},
		{"change id", mid, func(n *Journal) { n.ID = "other" }, RuleIdentity},
		{"change created_at", mid, func(n *Journal) { n.CreatedAt = n.CreatedAt.Add(-time.Second) }, RuleIdentity},
		{"change kind", mid, func(n *Journal) { n.Kind = "Task" }, RuleIdentity},
		{"add non-goal", mid, func(n *Journal) { n.NonGoals = append(n.NonGoals, "x") }, RuleNonGoals},
		{"edit non-goal", mid, func(n *Journal) { n.NonGoals[0] = "UI redesign after all" }, RuleNonGoals},
		{"remove non-goals", mid, func(n *Journal) { n.NonGoals = []string{} }, RuleNonGoals},
		{"same revision", mid, func(n *Journal) { n.Revision-- }, RuleRevision},
		{"revision jump", mid, func(n *Journal) { n.Revision++ }, RuleRevision},
		{"updated_at back", mid, func(n *Journal) { n.UpdatedAt = n.UpdatedAt.Add(-time.Hour) }, RuleTimestamps},
		{"skip a phase", mid, func(n *Journal) { n.Phase = PhaseReview }, RulePhase},
		{"skip a phase with receipts", mid, func(n *Journal) {
			for _, p := range []Phase{PhaseBuild, PhaseVerify} {
				n.Receipts[p] = Receipt{Summary: "x", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: later(n)}}, SealedAt: later(n)}
			}
			n.Phase = PhaseReview
		}, RulePhase},
		{"phase back", mid, func(n *Journal) { n.Phase = PhasePlan; delete(n.Receipts, PhasePlan) }, RulePhase},
		{"rewrite sealed summary", mid, func(n *Journal) {
			r := n.Receipts[PhaseDesign]
			r.Summary = "better story"
			n.Receipts[PhaseDesign] = r
		}, RuleReceipts},
		{"move seal time", mid, func(n *Journal) {
			r := n.Receipts[PhaseDesign]
			r.SealedAt = r.SealedAt.Add(time.Millisecond)
			n.Receipts[PhaseDesign] = r
		}, RuleReceipts},
		{"remove a receipt", mid, func(n *Journal) { delete(n.Receipts, PhaseFrame) }, RuleReceipts},
		{"remove receipt evidence", mid, func(n *Journal) {
			r := n.Receipts[PhaseFrame]
			r.Evidence = r.Evidence[:0]
			n.Receipts[PhaseFrame] = r
		}, RuleEvidence},
		{"edit receipt evidence", mid, func(n *Journal) {
			n.Receipts[PhaseFrame].Evidence[0].Text = "edited"
		}, RuleEvidence},
		{"remove item evidence", mid, func(n *Journal) { n.Checklist[0].Evidence = nil }, RuleEvidence},
		{"edit item evidence note", mid, func(n *Journal) { n.Checklist[0].Evidence[0].Note = "added later" }, RuleEvidence},
		{"reorder evidence", done, func(n *Journal) {
			e := n.Receipts[PhaseBuild].Evidence
			e[0], e[1] = e[1], e[0]
		}, RuleEvidence},
		{"remove an item", mid, func(n *Journal) { n.Checklist = n.Checklist[:1] }, RuleChecklist},
		{"edit item text", mid, func(n *Journal) { n.Checklist[1].Text = "docs, roughly" }, RuleChecklist},
		{"rename item", mid, func(n *Journal) { n.Checklist[1].ID = "docs" }, RuleChecklist},
		{"insert item before", mid, func(n *Journal) {
			n.Checklist = append([]ChecklistItem{{ID: "first", Text: "x", Evidence: []Evidence{}}}, n.Checklist...)
		}, RuleChecklist},
		{"backdate new evidence", mid, func(n *Journal) {
			n.Checklist[1].Evidence = append(n.Checklist[1].Evidence, Evidence{Type: EvidenceNote, Text: "x", RecordedAt: n.CreatedAt})
		}, RuleTimestamps},
		{"backdate a seal", mid, func(n *Journal) {
			n.Receipts[PhaseBuild] = Receipt{Summary: "built", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: later(n)}}, SealedAt: n.Receipts[PhaseDesign].SealedAt}
			n.Phase = PhaseVerify
		}, RuleTimestamps},
		{"close too early", mid, func(n *Journal) {
			n.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: later(n)}
		}, RuleClosure},
		{"close with an unevidenced item", stage(t, s, "sealed", 8, false), func(n *Journal) {
			n.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: later(n)}
		}, RuleClosure},
		{"close and add evidence in one step", done, func(n *Journal) {
			n.Checklist[0].Evidence = append(n.Checklist[0].Evidence, Evidence{Type: EvidenceNote, Text: "x", RecordedAt: later(n)})
			n.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: later(n)}
		}, RuleClosure},
		{"anything after closure", closed, func(n *Journal) {}, RuleClosed},
		{"reopen", closed, func(n *Journal) { n.Closure = nil }, RuleClosed},

		{"invalid evidence", mid, func(n *Journal) {
			n.Checklist[1].Evidence = append(n.Checklist[1].Evidence, Evidence{Type: EvidenceTask, Task: "t1", State: "done", RecordedAt: later(n)})
		}, "invalid"},
		{"unknown phase", mid, func(n *Journal) { n.Phase = "ship" }, "invalid"},
		{"advance without a receipt", mid, func(n *Journal) { n.Phase = PhaseVerify }, RulePhase},
		{"receipt without advancing", mid, func(n *Journal) {
			n.Receipts[PhaseBuild] = Receipt{Summary: "built", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: later(n)}}, SealedAt: later(n)}
		}, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := tt.prev.Marshal()
			next := step(tt.prev)
			tt.mutate(next)
			err := CheckSuccessor(tt.prev, next)
			if after, _ := tt.prev.Marshal(); string(after) != string(before) {
				t.Fatalf("CheckSuccessor or the mutation changed prev")
			}
			switch tt.rule {
			case "":
				if err != nil {
					t.Fatalf("CheckSuccessor = %v; want a legitimate successor", err)
				}
			case "invalid":
				if exitcode.Of(err) != exitcode.Usage {
					t.Fatalf("CheckSuccessor = %v (exit %d); want an invalid journal (exit 2)", err, exitcode.Of(err))
				}
			default:
				var se *SuccessorError
				if !errors.As(err, &se) || se.Rule != tt.rule {
					t.Fatalf("CheckSuccessor = %v; want rule %s", err, tt.rule)
				}
				if exitcode.Of(err) != exitcode.Conflict || !errors.Is(err, ErrIllegal) {
					t.Errorf("exit %d; want 3 and ErrIllegal", exitcode.Of(err))
				}
				if !strings.Contains(err.Error(), "("+tt.rule+")") {
					t.Errorf("message %q does not name the rule", err)
				}
			}
		})
	}
}

func TestCheckGenesis(t *testing.T) {
	j, err := New("g", "t", []string{"n"}, []string{"a", "b"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckGenesis(j); err != nil {
		t.Fatalf("New's journal is not genesis: %v", err)
	}
	if j.Checklist[1].ID != "c1" {
		t.Errorf("item ids: %q; want c0, c1", j.Checklist[1].ID)
	}
	if i, err := j.Item("c1"); err != nil || i != 1 {
		t.Errorf("Item(c1) = %d, %v", i, err)
	}
	if i, err := j.Item("1"); err != nil || i != 1 {
		t.Errorf("Item(1) = %d, %v", i, err)
	}
	for _, k := range []string{"2", "c2", "-1", "", "01x"} {
		if _, err := j.Item(k); !errors.Is(err, ErrNotFound) {
			t.Errorf("Item(%q) = %v; want ErrNotFound", k, err)
		}
	}
}
