package goal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestStoreWalkAndReload(t *testing.T) {
	s, _ := testStore(t)
	j := stage(t, s, "widget", len(Phases), true)
	if !j.Closed() || !j.AllSealed() || j.Phase != PhaseDeliver {
		t.Fatalf("walked journal: closed=%v allSealed=%v phase=%s", j.Closed(), j.AllSealed(), j.Phase)
	}
	// genesis + check + 8 seals + check + close
	if want := int64(1 + 1 + 8 + 1 + 1); j.Revision != want {
		t.Errorf("revision = %d; want %d", j.Revision, want)
	}
	got, err := s.Get("widget")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := j.Marshal()
	b, _ := got.Marshal()
	if string(a) != string(b) {
		t.Errorf("reloaded journal differs:\n%s\nwant\n%s", b, a)
	}
	if disk := readBytes(t, s.Path("widget")); string(disk) != string(a) {
		t.Errorf("file bytes are not the canonical encoding")
	}
}

func TestStorePermissions(t *testing.T) {
	s, _ := testStore(t)
	stage(t, s, "g", 1, false)
	for path, want := range map[string]os.FileMode{s.Dir(): 0o700, s.Path("g"): 0o600, filepath.Join(s.Dir(), "g.lock"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode = %o; want %o", path, got, want)
		}
	}
}

// refused runs a mutation that must fail and proves the file untouched.
func refused(t *testing.T, s *Store, id string, wantCode int, wantMsg string, f func() error) {
	t.Helper()
	before := readBytes(t, s.Path(id))
	err := f()
	if err == nil {
		t.Fatalf("mutation succeeded; want exit %d (%s)", wantCode, wantMsg)
	}
	if got := exitcode.Of(err); got != wantCode {
		t.Errorf("exit code = %d (%v); want %d", got, err, wantCode)
	}
	if !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("error %q does not mention %q", err, wantMsg)
	}
	if after := readBytes(t, s.Path(id)); string(after) != string(before) {
		t.Errorf("journal changed by a refused mutation")
	}
}

func TestStoreRefusals(t *testing.T) {
	s, _ := testStore(t)
	j := stage(t, s, "g", 2, false) // phase design
	rev := j.Revision

	refused(t, s, "g", exitcode.Conflict, "stale revision 1", func() error {
		_, err := s.Check("g", 1, "c0", note("x"))
		return err
	})
	refused(t, s, "g", exitcode.Conflict, "stale revision", func() error {
		_, err := s.Check("g", rev+1, "c0", note("x"))
		return err
	})
	refused(t, s, "g", exitcode.NotFound, `no checklist item "7"`, func() error {
		_, err := s.Check("g", rev, "7", note("x"))
		return err
	})
	refused(t, s, "g", exitcode.NotFound, `no checklist item "nope"`, func() error {
		_, err := s.Check("g", rev, "nope", note("x"))
		return err
	})
	refused(t, s, "g", exitcode.Usage, "evidence[1].text", func() error {
		_, err := s.Check("g", rev, "c0", Evidence{Type: EvidenceNote})
		return err
	})
	refused(t, s, "g", exitcode.Usage, "at least one piece of evidence", func() error {
		_, err := s.Seal("g", rev, "x", nil)
		return err
	})
	refused(t, s, "g", exitcode.Conflict, "phase design has no receipt", func() error {
		_, err := s.Close("g", rev, sampleClosure())
		return err
	})
	refused(t, s, "g", exitcode.Usage, "revision must be at least 1", func() error {
		_, err := s.Check("g", 0, "c0", note("x"))
		return err
	})
	// A mutation function that rewrites history is refused by the
	// successor check even though it went through Update.
	refused(t, s, "g", exitcode.Conflict, "(identity)", func() error {
		_, err := s.Update("g", rev, func(j *Journal) error { j.Title = "other"; return nil })
		return err
	})
	refused(t, s, "g", exitcode.Conflict, "(receipts)", func() error {
		_, err := s.Update("g", rev, func(j *Journal) error {
			r := j.Receipts[PhaseFrame]
			r.Summary = "rewritten"
			j.Receipts[PhaseFrame] = r
			return nil
		})
		return err
	})
	if _, err := s.Check("missing", 1, "c0", note("x")); !errors.Is(err, ErrNotFound) || exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("check of a missing goal = %v; want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "missing.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a mutation of a missing goal left a lock file")
	}
	if _, err := s.Get("../etc/passwd"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("Get of a path-like id = %v; want exit 2", err)
	}
}

func TestStoreClosedIsImmutable(t *testing.T) {
	s, _ := testStore(t)
	j := stage(t, s, "g", len(Phases), true)
	rev := j.Revision
	for name, f := range map[string]func() error{
		"check":   func() error { _, err := s.Check("g", rev, "c0", note("late")); return err },
		"receipt": func() error { _, err := s.Seal("g", rev, "again", []Evidence{note("x")}); return err },
		"close":   func() error { _, err := s.Close("g", rev, sampleClosure()); return err },
		"put":     func() error { _, err := s.Put("g", rev, j); return err },
	} {
		t.Run(name, func(t *testing.T) {
			refused(t, s, "g", exitcode.Conflict, "goal is closed", f)
		})
	}
}

func TestStoreCreate(t *testing.T) {
	s, c := testStore(t)
	j, err := New("g", "title", nil, []string{"a"}, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(j); err != nil {
		t.Fatal(err)
	}
	refused(t, s, "g", exitcode.Conflict, "already exists", func() error {
		_, err := s.Create(j)
		return err
	})
	// Create accepts only genesis.
	for name, mutate := range map[string]func(*Journal){
		"revision": func(j *Journal) { j.Revision = 2 },
		"evidence": func(j *Journal) {
			j.Checklist[0].Evidence = []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: j.CreatedAt}}
		},
		"receipt": func(j *Journal) {
			j.Receipts[PhaseFrame] = Receipt{Summary: "x", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: j.CreatedAt}}, SealedAt: j.CreatedAt}
			j.Phase, j.Revision = PhaseExplore, 2
		},
		"updated": func(j *Journal) { j.UpdatedAt = j.UpdatedAt.Add(time.Second) },
	} {
		g := j.Clone()
		g.ID = "gen-" + name
		mutate(g)
		_, err := s.Create(g)
		if exitcode.Of(err) != exitcode.Conflict || !errors.Is(err, ErrIllegal) {
			t.Errorf("Create(non-genesis %s) = %v; want illegal (exit 3)", name, err)
		}
		if _, err := os.Stat(s.Path(g.ID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused Create(%s) left a journal", name)
		}
	}
	if _, err := New("a/b", "t", nil, nil, c.now()); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("New(a/b) = %v; want exit 2 naming the rule", err)
	}
	if _, err := New("g2", "", nil, nil, c.now()); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "journal.title") {
		t.Errorf("New with empty title = %v; want exit 2 on journal.title", err)
	}
	if _, err := New("g2", "t", nil, []string{"a\nb"}, c.now()); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("New with a two-line item = %v; want exit 2", err)
	}
}

func TestStoreSealDeliverThenClose(t *testing.T) {
	s, _ := testStore(t)
	j := stage(t, s, "g", len(Phases), false)
	if j.Phase != PhaseDeliver || !j.AllSealed() {
		t.Fatalf("after 8 seals: phase %s, all sealed %v", j.Phase, j.AllSealed())
	}
	refused(t, s, "g", exitcode.Conflict, "(all-sealed)", func() error {
		_, err := s.Seal("g", j.Revision, "ninth", []Evidence{note("x")})
		return err
	})
	// c1 has no evidence yet: closure refused.
	refused(t, s, "g", exitcode.Conflict, "checklist item 1 (c1) has no evidence", func() error {
		_, err := s.Close("g", j.Revision, sampleClosure())
		return err
	})
	// Evidence may still be appended to a sealed receipt before closure.
	j = must[*Journal](t)(s.Put("g", j.Revision, func() *Journal {
		d := j.Clone()
		r := d.Receipts[PhaseVerify]
		r.Evidence = append(r.Evidence, Evidence{Type: EvidenceURL, URL: "https://ci.example/7"})
		d.Receipts[PhaseVerify] = r
		return d
	}()))
	if got := len(j.Receipts[PhaseVerify].Evidence); got != 2 {
		t.Errorf("verify receipt evidence = %d; want 2", got)
	}
	j = must[*Journal](t)(s.Check("g", j.Revision, "c1", note("docs read")))
	j = must[*Journal](t)(s.Close("g", j.Revision, sampleClosure()))
	if !j.Closure.ClosedAt.Equal(j.UpdatedAt) {
		t.Errorf("closed_at %v != updated_at %v", j.Closure.ClosedAt, j.UpdatedAt)
	}
}

func TestStoreEmptyChecklistCannotClose(t *testing.T) {
	s, _ := testStore(t)
	j := must[*Journal](t)(s.Create(must[*Journal](t)(New("g", "t", nil, nil, s.Now()))))
	for range Phases {
		j = must[*Journal](t)(s.Seal("g", j.Revision, "s", []Evidence{note("n")}))
	}
	refused(t, s, "g", exitcode.Conflict, "checklist is empty", func() error {
		_, err := s.Close("g", j.Revision, sampleClosure())
		return err
	})
}

func TestStoreClockBackwards(t *testing.T) {
	s, c := testStore(t)
	j := stage(t, s, "g", 0, false)
	c.t = t0.Add(-time.Hour) // the clock steps back
	j2, err := s.Check("g", j.Revision, "c1", note("x"))
	if err != nil {
		t.Fatal(err)
	}
	if !j2.UpdatedAt.Equal(j.UpdatedAt) {
		t.Errorf("updated_at = %v; want it held at %v", j2.UpdatedAt, j.UpdatedAt)
	}
	if got := j2.Checklist[1].Evidence[0].RecordedAt; !got.Equal(j.UpdatedAt) {
		t.Errorf("recorded_at = %v; want %v", got, j.UpdatedAt)
	}
}

func TestStorePut(t *testing.T) {
	s, _ := testStore(t)
	j := stage(t, s, "g", 3, false)
	doc := j.Clone()
	doc.UpdatedAt = time.Time{} // may be omitted
	doc.Checklist = append(doc.Checklist, ChecklistItem{ID: "perf", Text: "p99 under 5 ms", Evidence: []Evidence{note("bench")}})
	doc.Receipts[PhasePlan] = Receipt{Summary: "planned", Evidence: []Evidence{note("plan.md")}}
	doc.Phase = PhaseBuild
	got, err := s.Put("g", j.Revision, doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != j.Revision+1 || got.Phase != PhaseBuild || len(got.Checklist) != 3 {
		t.Fatalf("put result: rev %d phase %s items %d", got.Revision, got.Phase, len(got.Checklist))
	}
	for _, tm := range []time.Time{got.Receipts[PhasePlan].SealedAt, got.Receipts[PhasePlan].Evidence[0].RecordedAt, got.Checklist[2].Evidence[0].RecordedAt} {
		if !tm.Equal(got.UpdatedAt) {
			t.Errorf("stamp %v; want the store's %v", tm, got.UpdatedAt)
		}
	}
	// The document must name its base revision and keep its updated_at.
	stale := got.Clone()
	refused(t, s, "g", exitcode.Conflict, "(put-revision)", func() error {
		d := stale.Clone()
		d.Revision = got.Revision + 1
		_, err := s.Put("g", got.Revision, d)
		return err
	})
	refused(t, s, "g", exitcode.Conflict, "(put-revision)", func() error {
		d := stale.Clone()
		d.UpdatedAt = d.UpdatedAt.Add(time.Minute)
		_, err := s.Put("g", got.Revision, d)
		return err
	})
	// Backdated new evidence is refused.
	refused(t, s, "g", exitcode.Conflict, "(timestamps)", func() error {
		d := stale.Clone()
		d.Checklist[1].Evidence = append(d.Checklist[1].Evidence, Evidence{Type: EvidenceNote, Text: "old", RecordedAt: d.CreatedAt})
		_, err := s.Put("g", got.Revision, d)
		return err
	})
	// Sealing and closing in one step is refused: closure is its own step.
}

func TestStoreCorrupt(t *testing.T) {
	s, _ := testStore(t)
	stage(t, s, "g", 1, false)
	for name, data := range map[string]string{
		"torn":      `{"apiVersion": "art/v1alpha1", "kind": "Go`,
		"unknown":   strings.Replace(string(readBytes(t, s.Path("g"))), `"title"`, `"titel"`, 1),
		"wrong id":  strings.Replace(string(readBytes(t, s.Path("g"))), `"id": "g"`, `"id": "h"`, 1),
		"empty":     ``,
		"too large": strings.Repeat(" ", MaxJournalBytes+1),
	} {
		t.Run(name, func(t *testing.T) {
			s2, _ := testStore(t)
			stage(t, s2, "g", 0, false)
			if err := os.WriteFile(s2.Path("g"), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := s2.Get("g")
			if exitcode.Of(err) != exitcode.Internal || !errors.Is(err, ErrCorrupt) && name != "too large" {
				t.Errorf("Get(corrupt %s) = %v (exit %d); want ErrCorrupt, exit 125", name, err, exitcode.Of(err))
			}
			refusedCode := exitcode.Internal
			before := readBytes(t, s2.Path("g"))
			if _, err := s2.Check("g", 1, "c0", note("x")); exitcode.Of(err) != refusedCode {
				t.Errorf("Check on corrupt %s = %v; want exit 125", name, err)
			}
			if string(readBytes(t, s2.Path("g"))) != string(before) {
				t.Errorf("a corrupt journal was rewritten")
			}
			js, problems := s2.List()
			if len(js) != 0 || len(problems) != 1 {
				t.Errorf("List: %d journals, %d problems; want 0, 1", len(js), len(problems))
			}
		})
	}
}

func TestStoreListSkipsNonJournals(t *testing.T) {
	s, _ := testStore(t)
	stage(t, s, "b", 0, false)
	stage(t, s, "a", 1, false)
	for _, name := range []string{"a.json123456", "b.json", "notes.txt", ".hidden.json", "bad name.json"} {
		if name == "b.json" {
			continue
		}
		if err := os.WriteFile(filepath.Join(s.Dir(), name), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	js, problems := s.List()
	if len(problems) != 0 {
		t.Fatalf("List problems: %v", problems)
	}
	if len(js) != 2 || js[0].ID != "a" || js[1].ID != "b" {
		t.Fatalf("List = %v; want a, b", ids(js))
	}
	// The next mutation of a removes a's leftover temp file, not b's files.
	if _, err := s.Check("a", js[0].Revision, "c1", note("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "a.json123456")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover temp file of a not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "notes.txt")); err != nil {
		t.Errorf("unrelated file removed: %v", err)
	}
	empty := NewStore(t.TempDir())
	if js, problems := empty.List(); len(js) != 0 || len(problems) != 0 {
		t.Errorf("List of an empty home = %v, %v", js, problems)
	}
}

func ids(js []*Journal) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}
