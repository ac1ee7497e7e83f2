package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestCreateAppendResume(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	start := New(TypeStart)
	start.Run = &Run{Task: "fix", Workspace: "/ws", Allow: []string{"go"}, Verify: []string{"go", "test"}, Provider: "mock"}
	if err := w.Append(start); err != nil {
		t.Fatal(err)
	}
	obs := "ok"
	step := New(TypeStep)
	step.Step, step.Observation, step.State = 1, &obs, &State{Debt: true, Edits: 1}
	if err := w.Append(step); err != nil {
		t.Fatal(err)
	}
	// While held, nobody else may append or start over.
	if _, _, _, err := Resume(p); !errors.Is(err, ErrInUse) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("Resume of a held transcript: %v; want ErrInUse", err)
	}
	w.Close()
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v; want 0600", fi.Mode().Perm())
	}
	if _, err := Create(p); !errors.Is(err, ErrExists) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("Create over a transcript with records: %v; want ErrExists", err)
	}
	w, recs, dropped, err := Resume(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(recs) != 2 || dropped != 0 || recs[0].Run.Task != "fix" || recs[1].State.Edits != 1 || *recs[1].Observation != "ok" {
		t.Fatalf("Resume = %+v, dropped %d", recs, dropped)
	}
}

func TestResumeDropsTornTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(New(TypeStart)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	good, _ := os.ReadFile(p)
	torn := `{"apiVersion":"art/v1alpha1","kind":"TranscriptRecord","type":"st`
	if err := os.WriteFile(p, append(append([]byte{}, good...), torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader ignores the torn line and changes nothing.
	if recs, err := Read(p); err != nil || len(recs) != 1 {
		t.Fatalf("Read = %d records, %v", len(recs), err)
	}
	if b, _ := os.ReadFile(p); len(b) != len(good)+len(torn) {
		t.Fatal("Read changed the file")
	}
	w, recs, dropped, err := Resume(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || dropped != int64(len(torn)) {
		t.Fatalf("Resume = %d records, dropped %d; want 1, %d", len(recs), dropped, len(torn))
	}
	if err := w.Append(New(TypeResume)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	recs, err = Read(p)
	if err != nil || len(recs) != 2 || recs[1].Type != TypeResume {
		t.Fatalf("after resume: %d records, %v", len(recs), err)
	}
}

func TestCorruptRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.jsonl")
	for _, body := range []string{
		"{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"TranscriptRecord\",\"type\":\"start\",\"time\":\"2026-01-01T00:00:00Z\"}\nnot json\n",
		"{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"TranscriptRecord\",\"type\":\"start\",\"time\":\"2026-01-01T00:00:00Z\",\"bogus\":1}\n",
		"{\"apiVersion\":\"v9\",\"kind\":\"TranscriptRecord\",\"type\":\"start\",\"time\":\"2026-01-01T00:00:00Z\"}\n",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := Resume(p)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("Resume of %q: %v; want ErrCorrupt naming the line", body, err)
		}
		if b, _ := os.ReadFile(p); string(b) != body {
			t.Errorf("a corrupt transcript was changed")
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("Read(missing) = %v", err)
	}
	if _, _, _, err := Resume(filepath.Join(t.TempDir(), "missing")); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("Resume(missing) = %v", err)
	}
}
