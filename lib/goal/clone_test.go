package goal

import (
	"testing"
)

// TestCloneIsDeep mutates every map, slice and pointer of a clone and
// proves the original's bytes never move.
func TestCloneIsDeep(t *testing.T) {
	s, _ := testStore(t)
	orig := stage(t, s, "g", 8, true)
	want, _ := orig.Marshal()
	mutations := map[string]func(c *Journal){
		"non_goals":        func(c *Journal) { c.NonGoals[0] = "changed" },
		"checklist item":   func(c *Journal) { c.Checklist[0].Text = "changed" },
		"item evidence":    func(c *Journal) { c.Checklist[0].Evidence[0].Text = "changed" },
		"item evidence ap": func(c *Journal) { _ = append(c.Checklist[0].Evidence[:0], note("x")) },
		"argv":             func(c *Journal) { c.Checklist[0].Evidence[0].Argv[0] = "rm" },
		"exit code":        func(c *Journal) { *c.Checklist[0].Evidence[0].ExitCode = 99 },
		"receipts map":     func(c *Journal) { delete(c.Receipts, PhaseFrame); c.Receipts["x"] = Receipt{} },
		"receipt evidence": func(c *Journal) { c.Receipts[PhaseBuild].Evidence[1].Argv[0] = "changed" },
		"receipt exit":     func(c *Journal) { *c.Receipts[PhaseBuild].Evidence[1].ExitCode = 42 },
		"from_queue":       func(c *Journal) { c.Receipts[PhaseBuild].Evidence[5].FromQueue.Seq = 999 },
		"from_sink":        func(c *Journal) { c.Receipts[PhaseBuild].Evidence[6].FromSink.Line = 999 },
		"closure":          func(c *Journal) { c.Closure.Outcome = "changed" },
		"closure cleanup":  func(c *Journal) { c.Closure.Cleanup[0] = "changed" },
		"closure debt":     func(c *Journal) { c.Closure.Debt[0].Text = "changed" },
		"closure risks":    func(c *Journal) { c.Closure.Risks[0].Text = "changed" },
		"closure next":     func(c *Journal) { c.Closure.Next[0].Goal = "changed" },
		"checklist append": func(c *Journal) { _ = append(c.Checklist[:1], ChecklistItem{ID: "x"}) },
	}
	for name, m := range mutations {
		c := orig.Clone()
		m(c)
		if got, _ := orig.Marshal(); string(got) != string(want) {
			t.Errorf("mutating the clone's %s changed the original", name)
		}
	}
	if (*Journal)(nil).Clone() != nil {
		t.Errorf("Clone(nil) != nil")
	}
	// A plain copy, by contrast, shares state: the reason Clone exists.
	shallow := *orig
	shallow.Receipts[PhaseFrame].Evidence[0].Text = "shared"
	if got, _ := orig.Marshal(); string(got) == string(want) {
		t.Errorf("a plain copy did not share evidence; the test no longer shows why Clone is needed")
	}
}
