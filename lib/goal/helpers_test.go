package goal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// t0 is the fixed start of every test clock.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)

// clock ticks one second per call, so every stamp in a test is distinct and
// predictable.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

func testStore(t testing.TB) (*Store, *clock) {
	t.Helper()
	c := &clock{t: t0}
	s := NewStore(t.TempDir())
	s.Now = c.now
	return s, c
}

func must[T any](t testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func note(text string) Evidence { return Evidence{Type: EvidenceNote, Text: text} }

func intp(n int) *int { return &n }

// sampleEvidence is one piece of evidence of every type.
func sampleEvidence() []Evidence {
	return []Evidence{
		{Type: EvidenceCommand, Argv: []string{"go", "test", "./..."}, ExitCode: intp(0)},
		{Type: EvidenceCommand, Argv: []string{"make", "lint"}, ExitCode: intp(2), Path: "out/lint.txt",
			Digest: "sha256:" + hex64('a')},
		{Type: EvidenceFile, Path: "docs/widget.md", Digest: "sha256:" + hex64('b')},
		{Type: EvidenceTask, Task: "t-42", State: "succeeded"},
		{Type: EvidenceEvent, Event: "sha256:" + hex64('c')},
		{Type: EvidenceTask, Task: "t-43", State: "failed", FromQueue: &QueueCheck{
			Dir: "/home/ana/.local/state/art/queues/default", Seq: 12, Attempts: 2, UpdatedAt: t0.Add(-time.Minute)}},
		{Type: EvidenceEvent, Event: "sha256:" + hex64('d'), FromSink: &SinkCheck{
			Path: "/home/ana/events.jsonl", Line: 7, Subject: "task/t-43", Type: "task.finished", Seq: 2, Time: t0.Add(-time.Minute)}},
		{Type: EvidenceURL, URL: "https://example.com/ci/run/7?attempt=1#log"},
		{Type: EvidenceNote, Text: "pairing session with ana\nall green", Note: "from the retro"},
	}
}

func hex64(c byte) string { return string(bytes.Repeat([]byte{c}, 64)) }

// stage builds goal id in s up to a stage: after genesis, evidence on c0,
// then `seals` phases sealed (0-8), then closed if close is true (which needs
// seals == 8 and evidence on every item, so it adds evidence to c1 first).
func stage(t testing.TB, s *Store, id string, seals int, close bool) *Journal {
	t.Helper()
	ok := must[*Journal](t)
	j := ok(New(id, "Ship the widget", []string{"no UI redesign"}, []string{"unit tests pass", "docs updated"}, s.Now()))
	j = ok(s.Create(j))
	j = ok(s.Check(id, j.Revision, "c0", sampleEvidence()[0]))
	for i := 0; i < seals; i++ {
		evs := []Evidence{note("sealed " + string(Phases[i]))}
		if i == 4 {
			evs = sampleEvidence()
		}
		j = ok(s.Seal(id, j.Revision, "done with "+string(Phases[i]), evs))
	}
	if close {
		j = ok(s.Check(id, j.Revision, "1", sampleEvidence()[2]))
		j = ok(s.Close(id, j.Revision, sampleClosure()))
	}
	return j
}

func sampleClosure() *ClosureDocument {
	return &ClosureDocument{
		TypeMeta: jsonx.Meta(KindClosure),
		ClosureBody: ClosureBody{
			Outcome: "widget shipped in v1.2",
			Cleanup: []string{"deleted the spike branch"},
			Debt:    []Debt{{Kind: "test", Text: "no darwin run"}},
			Risks:   []Risk{{Severity: "low", Text: "slow on huge inputs", Mitigation: "documented"}},
			Next:    []NextWork{{Title: "widget v2", Goal: "widget-v2"}, {Title: "tell support"}},
		},
	}
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixture(name string) string { return filepath.Join("..", "..", "testdata", "goal", name) }
