package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/mock"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/exitcode"
)

var fixScript = []string{
	`{"action":"read_file","path":"a.txt"}`,
	`{"action":"replace_text","path":"a.txt","old":"old","new":"new"}`,
	`{"action":"verify"}`,
	`{"action":"finish","summary":"fixed"}`,
}

func withTranscript(t *testing.T, path string) agent.Options {
	t.Helper()
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return agent.Options{Transcript: w}
}

func resumeFrom(t *testing.T, path string) agent.Options {
	t.Helper()
	w, recs, dropped, err := transcript.Resume(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return agent.Options{Transcript: w, Resume: &agent.Resume{Records: recs, Dropped: dropped}}
}

func TestResumeAfterStepLimit(t *testing.T) {
	ws := workspace(t)
	tp := filepath.Join(t.TempDir(), "run.jsonl")
	cfg := config(ws)
	cfg.MaxSteps = 2
	opt := withTranscript(t, tp)
	r := runLoop(t, context.Background(), cfg, mock.New(fixScript...), opt)
	if r.res.Status != agent.StatusStepLimit || !r.res.Debt {
		t.Fatalf("first run %+v", r.res)
	}
	opt.Transcript.Close()

	// The resumed run continues at step 3 with the same history and debt.
	cfg.MaxSteps = 10
	p := mock.New(fixScript...)
	ropt := resumeFrom(t, tp)
	r = runLoop(t, context.Background(), cfg, p, ropt)
	ropt.Transcript.Close()
	if r.res.Status != agent.StatusFinished || !r.res.Verified || r.res.Steps != 4 || r.res.Edits != 1 {
		t.Fatalf("resumed run %+v", r.res)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Step != 3 || len(reqs[0].History) != 2 || !reqs[0].Debt {
		t.Fatalf("resumed requests %+v", reqs)
	}
	// A finished run cannot be resumed.
	w, recs, _, err := transcript.Resume(tp)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = agent.Run(context.Background(), cfg, mock.New(fixScript...), agent.Options{Transcript: w, Resume: &agent.Resume{Records: recs}})
	if !errors.Is(err, agent.ErrResumeFinished) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("resume of a finished run: %v", err)
	}
}

// A process killed after an edit's intent was recorded but before its step
// was: the resumed run closes the step as interrupted and reopens the debt
// even though the transcript never saw the edit complete.
func TestResumeInterruptedEditReopensDebt(t *testing.T) {
	ws := workspace(t)
	tp := filepath.Join(t.TempDir(), "run.jsonl")
	cfg := config(ws)
	cfg.MaxSteps = 1
	opt := withTranscript(t, tp)
	runLoop(t, context.Background(), cfg, mock.New(fixScript...), opt)
	// Simulate the crash: the intent of step 2 is durable, the edit landed,
	// and nothing after it was written.
	intent := transcript.New(transcript.TypeIntent)
	intent.Step, intent.Reply = 2, &fixScript[1]
	intent.RequestHash = "sha256:" + strings.Repeat("ab", 32) // as recorded before the crash
	intent.Decision = json.RawMessage(fixScript[1])
	if err := opt.Transcript.Append(intent); err != nil {
		t.Fatal(err)
	}
	opt.Transcript.Close()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello new world\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg.MaxSteps = 10
	p := mock.New(
		fixScript[0], fixScript[1],
		`{"action":"finish","summary":"the edit is there"}`,
		`{"action":"verify"}`,
		`{"action":"finish","summary":"verified"}`,
	)
	r := runLoop(t, context.Background(), cfg, p, resumeFrom(t, tp))
	if got := strings.Join(r.outcomes(), " "); got != "rejected:debt verify:pass result" {
		t.Fatalf("outcomes %s", got)
	}
	if r.res.Status != agent.StatusFinished || !r.res.Verified || r.res.Steps != 5 {
		t.Fatalf("result %+v", r.res)
	}
	first := p.Requests()[0]
	if first.Step != 3 || !first.Debt || first.History[1].Observation != agent.InterruptedNote {
		t.Fatalf("first resumed request: step %d debt %v history %+v", first.Step, first.Debt, first.History)
	}
	validateTranscript(t, tp)
	recs, err := transcript.Read(tp)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, rec := range recs {
		k := rec.Type
		if rec.Interrupted {
			k += "(interrupted)"
		}
		kinds = append(kinds, k)
	}
	want := "start step end intent resume step(interrupted) step intent step step end"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("records\n%s\nwant\n%s", got, want)
	}
}

func TestResumeMismatch(t *testing.T) {
	ws := workspace(t)
	tp := filepath.Join(t.TempDir(), "run.jsonl")
	cfg := config(ws)
	cfg.MaxSteps = 1
	opt := withTranscript(t, tp)
	runLoop(t, context.Background(), cfg, mock.New(fixScript...), opt)
	opt.Transcript.Close()
	for name, mut := range map[string]func(*agent.Config){
		"task":      func(c *agent.Config) { c.Task = "another task" },
		"verify":    func(c *agent.Config) { c.Verify = []string{"true"} },
		"workspace": func(c *agent.Config) { c.Workspace = workspace(t) },
	} {
		c := cfg
		mut(&c)
		ropt := resumeFrom(t, tp)
		_, err := agent.Run(context.Background(), c, mock.New(fixScript...), ropt)
		ropt.Transcript.Close()
		if !errors.Is(err, agent.ErrResumeMismatch) {
			t.Errorf("resume with another %s: %v", name, err)
		}
	}
}

// A transcript replays as a cassette: the same requests get the recorded
// replies, and a run that diverges fails loudly at the first mismatch.
func TestCassette(t *testing.T) {
	ws := workspace(t)
	tp := filepath.Join(t.TempDir(), "run.jsonl")
	first := runLoop(t, context.Background(), config(ws), mock.New(fixScript...), withTranscript(t, tp))
	if first.res.Status != agent.StatusFinished {
		t.Fatalf("recording %+v", first.res)
	}
	validateTranscript(t, tp)

	replay := func(cfg agent.Config) *run {
		c, err := mock.Cassette(tp)
		if err != nil {
			t.Fatal(err)
		}
		return runLoop(t, context.Background(), cfg, c, agent.Options{})
	}
	again := replay(config(workspace(t)))
	if again.res.Status != agent.StatusFinished || !again.res.Verified {
		t.Fatalf("replay %+v", again.res)
	}
	for i := range first.events {
		if first.events[i].RequestHash != again.events[i].RequestHash {
			t.Fatalf("event %d hash %s; recorded %s", i, again.events[i].RequestHash, first.events[i].RequestHash)
		}
	}
	cfg := config(workspace(t))
	cfg.Task = "a different task"
	diverged := replay(cfg)
	if diverged.res.Status != agent.StatusProviderError || !errors.Is(diverged.res.Err, mock.ErrMismatch) || diverged.res.Steps != 0 {
		t.Fatalf("diverged replay %+v", diverged.res)
	}
	if !strings.Contains(diverged.res.Err.Error(), "cassette step 1") {
		t.Fatalf("mismatch error %q does not name the step", diverged.res.Err)
	}
}

// Nothing the provider or loop writes to the transcript is a secret it was
// not given: the transcript holds requests by hash only.
func TestTranscriptHoldsHashesNotRequests(t *testing.T) {
	ws := workspace(t)
	tp := filepath.Join(t.TempDir(), "run.jsonl")
	cfg := config(ws)
	cfg.Task = "task text that appears only in the start record"
	cfg.MaxSteps = 2
	runLoop(t, context.Background(), cfg, mock.New(fixScript...), withTranscript(t, tp))
	b, _ := os.ReadFile(tp)
	if n := strings.Count(string(b), cfg.Task); n != 1 {
		t.Fatalf("task text appears %d times in the transcript; want once (start record)", n)
	}
}
