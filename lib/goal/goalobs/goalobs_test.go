package goalobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/obs"
)

// goalSources is a queue and a sink in memory.
type goalSources struct{}

var eventID = "sha256:" + strings.Repeat("ab", 32)

func (goalSources) Task(id string) (goal.TaskState, goal.QueueCheck, error) {
	qc := goal.QueueCheck{Dir: "/q", Seq: 5, Attempts: 1, UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	switch id {
	case "built":
		return "succeeded", qc, nil
	case "slow":
		return "running", qc, nil
	}
	return "", goal.QueueCheck{}, exitcode.Errorf(exitcode.NotFound, "task %s: not in the queue /q", id)
}

func (goalSources) Event(id string) (goal.SinkCheck, error) {
	if id != eventID {
		return goal.SinkCheck{}, exitcode.Errorf(exitcode.NotFound, "event %s: not in /e.jsonl", id)
	}
	return goal.SinkCheck{Path: "/e.jsonl", Line: 1, Subject: "task/built", Type: "task.finished", Seq: 2, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}

// TestGoalStoreMutations: every mutation the CLI makes goes through
// the store with Hook set, with the store's own results, and each is recorded with what it
// added; the pipeline links (task and event ids) survive redaction intact.
func TestGoalStoreMutations(t *testing.T) {
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	s := goal.NewStore(t.TempDir())
	s.Sources = goalSources{}
	ctx := context.Background()
	s.OnUpdate = Hook(ctx, em, "")
	j, err := goal.New("g", "Ship", nil, []string{"built"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = s.Create(j); err != nil {
		t.Fatal(err)
	}
	j, err = s.Check("g", j.Revision, "c0", goal.Evidence{Type: goal.EvidenceTask, Task: "built"})
	if err != nil {
		t.Fatal(err)
	}
	j, err = s.Seal("g", j.Revision, "framed", []goal.Evidence{{Type: goal.EvidenceEvent, Event: eventID}, {Type: goal.EvidenceNote, Text: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Check("g", j.Revision, "c0", goal.Evidence{Type: goal.EvidenceTask, Task: "slow"})
	if exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("running task: %v", err)
	}
	doc := j.Clone()
	doc.Checklist = append(doc.Checklist, goal.ChecklistItem{ID: "more", Text: "more", Evidence: []goal.Evidence{}})
	if j, err = s.Put("g", j.Revision, doc); err != nil {
		t.Fatal(err)
	}
	if len(j.Checklist) != 2 || j.Revision != 4 {
		t.Fatalf("put: %d items at revision %d", len(j.Checklist), j.Revision)
	}
	_, err = s.Close("g", j.Revision, &goal.ClosureDocument{})
	if !errors.Is(err, goal.ErrIllegal) {
		t.Fatalf("close too early: %v", err)
	}
	stored, _ := os.ReadFile(s.Path("g"))
	if want, _ := j.Marshal(); string(stored) != string(want) {
		t.Error("the store returned another journal than it stored")
	}

	envs := mem.Envelopes()
	var types []string
	for _, e := range envs {
		types = append(types, e.Type())
	}
	want := "goal.created goal.updated goal.updated goal.update_refused goal.updated goal.update_refused"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v; want %s", types, want)
	}
	added := func(i int) map[string]any { return attrsOf(t, envs[i])["added"].(map[string]any) }
	if got := added(1); !reflect.DeepEqual(got, map[string]any{
		"evidence": map[string]any{"task": float64(1)},
		"tasks":    []any{map[string]any{"id": "built", "state": "succeeded", "verified": true}},
		"events":   []any{},
	}) {
		t.Errorf("check added %v", got)
	}
	if got := added(2); !reflect.DeepEqual(got, map[string]any{
		"evidence": map[string]any{"event": float64(1), "note": float64(1)},
		"tasks":    []any{},
		"events":   []any{map[string]any{"id": eventID, "verified": true}},
	}) {
		t.Errorf("seal added %v", got)
	}
	if got := added(4); !reflect.DeepEqual(got["evidence"], map[string]any{}) {
		t.Errorf("put of a checklist item added %v", got)
	}
	if envs[2].Redaction().Count() != 0 {
		t.Errorf("redaction touched the seal's event: %v", envs[2].Redaction().Reasons())
	}
	refused := attrsOf(t, envs[3])
	if refused["error"].(map[string]any)["exit_code"] != float64(3) || refused["before"].(map[string]any)["revision"] != float64(3) {
		t.Errorf("refusal %v", refused)
	}
}

// failingSink refuses every event.
type failingSink struct{}

func (failingSink) Name() string { return "broken" }
func (failingSink) Append(context.Context, *obs.Envelope) (obs.Outcome, error) {
	return obs.Failed, errors.New("disk full")
}
func (failingSink) Close() error { return nil }

// TestGoalStoreSinkFailure: a sink that fails is reported and never fails
// the mutation it observes.
func TestGoalStoreSinkFailure(t *testing.T) {
	var warned []error
	em := obs.New(obs.Options{Warn: func(err error) { warned = append(warned, err) }}, failingSink{})
	defer em.Close()
	s := goal.NewStore(t.TempDir())
	ctx := context.Background()
	s.OnUpdate = Hook(ctx, em, "")
	j, _ := goal.New("g", "Ship", nil, []string{"x"}, time.Now())
	if _, err := s.Create(j); err != nil {
		t.Fatal(err)
	}
	j, err := s.Check("g", 1, "0", goal.Evidence{Type: goal.EvidenceNote, Text: "n"})
	if err != nil || j.Revision != 2 {
		t.Fatalf("check with a failing sink: %v", err)
	}
	if len(warned) != 2 || !strings.Contains(warned[1].Error(), "disk full") {
		t.Errorf("warnings %v", warned)
	}
	// A nil Emitter records nothing and changes nothing either.
	s.OnUpdate = Hook(ctx, nil, "")
	if _, err := s.Check("g", 2, "0", goal.Evidence{Type: goal.EvidenceNote, Text: "m"}); err != nil {
		t.Fatal(err)
	}
}

func attrsOf(t *testing.T, env *obs.Envelope) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(env.Attrs(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHook: created, updated and a refused update, with snapshots and the
// correlation.
func TestHook(t *testing.T) {
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	gs := goal.NewStore(t.TempDir())
	gs.OnUpdate = Hook(context.Background(), em, "release-1")
	j, err := goal.New("g1", "Ship the thing", nil, []string{"it works"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gs.Create(j); err != nil {
		t.Fatal(err)
	}
	note := goal.Evidence{Type: goal.EvidenceNote, Text: "framed"}
	next, err := gs.Update("g1", 1, func(j *goal.Journal) error { return j.Seal("Framed the goal.", []goal.Evidence{note}) })
	if err != nil {
		t.Fatal(err)
	}
	if next.Revision != 2 {
		t.Fatalf("revision %d", next.Revision)
	}
	_, err = gs.Update("g1", 1, func(j *goal.Journal) error { return nil })
	if err == nil {
		t.Fatal("stale revision accepted")
	}
	envs := mem.Envelopes()
	if len(envs) != 3 {
		t.Fatalf("%d events; want created, updated, update_refused", len(envs))
	}
	types := []string{envs[0].Type(), envs[1].Type(), envs[2].Type()}
	if strings.Join(types, " ") != "goal.created goal.updated goal.update_refused" || envs[2].Seq() != 3 || envs[1].Correlation() != "release-1" {
		t.Errorf("types %v", types)
	}
	u := attrsOf(t, envs[1])
	before, after := u["before"].(map[string]any), u["after"].(map[string]any)
	if before["revision"] != float64(1) || before["phase"] != "frame" || after["revision"] != float64(2) || after["phase"] != "explore" || len(after["sealed"].([]any)) != 1 {
		t.Errorf("snapshots before %v after %v", before, after)
	}
	r := attrsOf(t, envs[2])
	if r["error"].(map[string]any)["exit_code"] != float64(3) {
		t.Errorf("refusal %v", r)
	}
}
