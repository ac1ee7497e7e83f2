package mock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/exitcode"
)

func req(step int) *provider.Request {
	r := provider.NewRequest()
	r.Task, r.Step, r.MaxSteps, r.Allow, r.Verify, r.History = "t", step, 10, []string{}, []string{"true"}, []provider.Turn{}
	return r
}

func TestScript(t *testing.T) {
	p, err := Parse([]byte(`
{"action":"verify"}

{"error":"overloaded"}
not json at all
{"error":"x","action":"verify"}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := p.Decide(ctx, req(1)); err != nil || r.Text != `{"action":"verify"}` || r.Usage != nil {
		t.Fatalf("step 1: %+v, %v", r, err)
	}
	if _, err := p.Decide(ctx, req(2)); err == nil || err.Error() != "mock: overloaded" {
		t.Fatalf("step 2: %v; want the scripted error", err)
	}
	// A line that is not a decision is returned as the model's text: the
	// loop, not the mock, judges it.
	if r, err := p.Decide(ctx, req(3)); err != nil || r.Text != "not json at all" {
		t.Fatalf("step 3: %+v, %v", r, err)
	}
	if r, err := p.Decide(ctx, req(4)); err != nil || !strings.HasPrefix(r.Text, `{"error":"x"`) {
		t.Fatalf("step 4: %+v, %v", r, err)
	}
	if _, err := p.Decide(ctx, req(5)); err == nil || !strings.Contains(err.Error(), "script has no reply for step 5") {
		t.Fatalf("step 5: %v", err)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("stop"))
	if _, err := p.Decide(cctx, req(1)); err == nil || !strings.Contains(err.Error(), "stop") {
		t.Fatalf("cancelled: %v", err)
	}
	if got := len(p.Requests()); got != 5 {
		t.Fatalf("recorded %d requests; want 5 (the cancelled call is refused before recording)", got)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "\n\n", `{"error":42}`, `{"error":""}`} {
		if _, err := Parse([]byte(s)); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Parse(%q) = %v; want a usage error", s, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.jsonl")); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestCassette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	add := func(r *transcript.Record) {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	start := transcript.New(transcript.TypeStart)
	start.Run = &transcript.Run{Task: "t", Allow: []string{}, Verify: []string{"true"}}
	add(start)
	reply, obs := `{"action":"verify"}`, "ok"
	step := transcript.New(transcript.TypeStep)
	step.Step, step.RequestHash, step.Reply, step.Observation = 1, req(1).Hash(), &reply, &obs
	step.Usage = &provider.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}
	add(step)
	end := transcript.New(transcript.TypeEnd)
	end.Status, end.Step, end.RequestHash, end.Error = "provider_error", 2, req(2).Hash(), "openai: HTTP 500: boom"
	add(end)
	w.Close()

	p, err := Cassette(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := p.Decide(ctx, req(1))
	if err != nil || r.Text != reply || r.Usage == nil || r.Usage.TotalTokens != 4 {
		t.Fatalf("step 1: %+v, %v", r, err)
	}
	if _, err := p.Decide(ctx, req(2)); err == nil || !strings.Contains(err.Error(), "openai: HTTP 500: boom") {
		t.Fatalf("step 2 replays the recorded provider error: %v", err)
	}
	other := req(1)
	other.Task = "something else"
	if _, err := p.Decide(ctx, other); !errors.Is(err, ErrMismatch) {
		t.Fatalf("diverged request: %v; want ErrMismatch", err)
	}
	if _, err := p.Decide(ctx, req(3)); err == nil || !strings.Contains(err.Error(), "cassette has no reply for step 3") {
		t.Fatalf("step 3: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Cassette(empty); err == nil {
		t.Fatal("a cassette without replies was accepted")
	}
}
