package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/queue"
)

// TestPagesRender renders each page over the shapes its data takes that
// the browser fixture does not reach (a run again after its worker died, a
// compacted manifest, an unreadable transcript, a closed goal, an empty
// chart), and checks the words a reader needs.
func TestPagesRender(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ended := at.Add(time.Second)
	code := 1
	obsText := "exit 1"
	cases := []struct {
		page string
		data any
		want []string
	}{
		{"task", map[string]any{"Name": "q", "T": &TaskView{
			Status: queue.TaskStatus{ID: "t1", State: queue.StateSucceeded, Attempts: 1, MaxAttempts: 1, HistoryFrom: 7,
				Last: &queue.LastRun{Attempt: 1, Status: "succeeded", DurationMS: 1500},
				History: []queue.AttemptRun{
					{Attempt: 1, Claim: 3, ClaimedAt: at, Worker: "w1", Result: queue.EventRequeued, Reason: "worker w1 died"},
					{Attempt: 1, Claim: 9, ClaimedAt: at, Worker: "w2", Result: queue.EventSucceeded, EndedAt: &ended, Status: "succeeded", DurationMS: 1500, RanAgain: true},
					{Attempt: 2, Claim: 12, ClaimedAt: at, Worker: "w3"},
				}},
			TranscriptPath: "/elsewhere/t.jsonl", TranscriptErr: "not inside a transcript directory the server was given: not read",
		}}, []string{"ran again after its worker died", "requeued", "worker w1 died", "running", "1.5s", "Events before 7 were compacted", "(compacted into the snapshot)", "not read"}},
		{"task", map[string]any{"Name": "q", "T": &TaskView{
			Status:         queue.TaskStatus{ID: "t2", State: queue.StateFailed, Last: &queue.LastRun{Attempt: 1, Status: "failed", ExitCode: 1}, OutputTail: "boom\n"},
			Manifest:       json.RawMessage(`{"program":"artagent"}`),
			TranscriptPath: "/t/t2.jsonl",
			Transcript: []transcript.Record{
				{Type: "step", Step: 1, Decision: json.RawMessage(`{"action":"run_tool","program":"go","reason":"r"}`), Outcome: "refused", Refusal: "policy", ExitCode: &code, Observation: &obsText},
				{Type: "end", Status: "gave_up", Error: "too many steps"},
			},
		}}, []string{"Not claimed yet", "boom", "run_tool", "refused", "policy", "gave_up", "too many steps", `"program": "artagent"`}},
		{"goal", map[string]any{"J": &goal.Journal{ID: "g", Title: "T", Phase: goal.PhaseDeliver, Revision: 12,
			Checklist: []goal.ChecklistItem{{ID: "c0", Text: "works", Evidence: []goal.Evidence{
				{Type: "command", Argv: []string{"go", "test"}, ExitCode: &code},
				{Type: "url", URL: "javascript:alert(1)"},
				{Type: "event", Event: "sha256:ab", FromSink: &goal.SinkCheck{Path: "/s.jsonl", Line: 3, Subject: "goal/g", Type: "t", Seq: 2}},
			}}},
			Receipts: goal.Receipts{goal.PhaseFrame: {Summary: "framed", SealedAt: at}},
			Closure:  &goal.Closure{ClosureBody: goal.ClosureBody{Outcome: "done", Cleanup: []string{"rm tmp"}, Risks: []goal.Risk{{Severity: "low", Text: "r1"}}, Next: []goal.NextWork{{Title: "more", Goal: "g2"}}}, ClosedAt: at},
		}}, []string{"framed", "go", "test", "exit 1", "javascript:alert(1)", "line 3", "Closed 2026-01-02", "rm tmp", "risk (low): r1", `href="/goals/g2"`, "each change is an event"}},
		{"queue", map[string]any{"Name": "q", "Summary": queue.Summary{}, "Chart": &Chart{}}, []string{"The log holds no events yet"}},
		{"queues", []QueueEntry(nil), []string{"No queues"}},
		{"queues", []QueueEntry{{Name: "bad", Error: "corrupt log"}}, []string{"corrupt log"}},
		{"events", map[string]any{"Q": &eventQuery{}, "Sinks": []string(nil)}, []string{"No sinks"}},
		{"goals", map[string]any{"Problems": []string{"goal x: corrupt"}}, []string{"goal x: corrupt", "No goals"}},
		{"error", "task x: not found", []string{"task x: not found"}},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		render(rec, c.page, "Title", c.data)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", c.page, rec.Code, body)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) && !strings.Contains(body, strings.ReplaceAll(strings.ReplaceAll(w, `"`, "&#34;"), "'", "&#39;")) {
				t.Errorf("%s page lacks %q:\n%s", c.page, w, body)
			}
		}
		if strings.Contains(body, `href="javascript`) {
			t.Errorf("%s page links javascript:", c.page)
		}
	}
}

func TestTaskLink(t *testing.T) {
	for subject, want := range map[string]string{
		"queue/default/task/build-1": "/queues/default/tasks/build-1",
		"queue/a/task/b/c":           "",
		"queue/../task/x":            "",
		"queue/q/task/":              "",
		"goal/g1":                    "",
		"queue/q":                    "",
		"queue/q/task/javascript:x":  "",
	} {
		if got := taskLink(subject); got != want {
			t.Errorf("taskLink(%q) = %q, want %q", subject, got, want)
		}
	}
}
