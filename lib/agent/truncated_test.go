package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/mock"
	"github.com/art-runtime/art/lib/agent/transcript"
)

// scripted answers step N with replies[N-1].
func scripted(replies ...*provider.Reply) (provider.Provider, *[]*provider.Request) {
	var reqs []*provider.Request
	return fnProvider(func(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
		reqs = append(reqs, req)
		r := *replies[req.Step-1]
		return &r, nil
	}), &reqs
}

// A reply cut off at the token limit is its own outcome: the model is
// told, nothing is acted on, it does not count as (or reset) a format
// error, and MaxTruncations of them in a row end the run as truncated.
func TestTruncatedReplies(t *testing.T) {
	long := `{"action":"replace_text","path":"a.txt","old":"` + strings.Repeat("z", 16000)
	cut := &provider.Reply{Text: long, Truncated: true}
	p, reqs := scripted(
		cut,
		&provider.Reply{Text: `not json`},
		cut,
		&provider.Reply{Text: `{"action":"read_file","path":"a.txt"}`},
		cut, cut,
	)
	ws := workspace(t)
	cfg := config(ws)
	tp := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := transcript.Create(tp)
	if err != nil {
		t.Fatal(err)
	}
	r := runLoop(t, context.Background(), cfg, p, agent.Options{Transcript: w})
	w.Close()
	want := "truncated rejected:format truncated observation truncated truncated result"
	if got := strings.Join(r.outcomes(), " "); got != want {
		t.Fatalf("outcomes %s; want %s", got, want)
	}
	if r.res.Status != agent.StatusTruncated || r.res.Steps != 6 || !strings.Contains(r.res.Err.Error(), "2 replies in a row cut off") {
		t.Fatalf("result %+v", r.res)
	}
	if r.res.ExitCode() != 1 {
		t.Fatalf("exit %d", r.res.ExitCode())
	}
	// The truncated step says so to the model, and the 16,000 characters
	// are never sent back in full.
	for _, req := range (*reqs)[1:] {
		if req.History[0].Outcome != "truncated" || !strings.Contains(req.History[0].Observation, "cut off") {
			t.Fatalf("history %+v", req.History[0])
		}
		for _, turn := range req.History {
			if len(turn.Reply) > provider.MaxTurnReplyBytes {
				t.Fatalf("step %d: a reply of %d bytes re-sent", req.Step, len(turn.Reply))
			}
		}
	}
	validateTranscript(t, tp)
	// The transcript keeps the raw reply in full.
	b, _ := os.ReadFile(tp)
	if !strings.Contains(string(b), strings.Repeat("z", 16000)) || !strings.Contains(string(b), `"outcome":"truncated"`) {
		t.Fatal("the transcript lost the raw cut-off reply")
	}

	// Resume rebuilds exactly the history the run had.
	recs, err := transcript.Read(tp)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the end record and the last step so the run can continue.
	var keep []transcript.Record
	for _, rec := range recs {
		if rec.Type == transcript.TypeEnd || rec.Step == 6 {
			continue
		}
		keep = append(keep, rec)
	}
	p2, reqs2 := scripted(nil, nil, nil, nil, nil, &provider.Reply{Text: `{"action":"verify"}`}, &provider.Reply{Text: `{"action":"finish","summary":"x"}`})
	rr := runLoop(t, context.Background(), cfg, p2, agent.Options{Resume: &agent.Resume{Records: keep}})
	if rr.res.Status != agent.StatusFinished {
		t.Fatalf("resumed result %+v", rr.res)
	}
	got, orig := (*reqs2)[0], (*reqs)[5]
	if got.Hash() != orig.Hash() || !reflect.DeepEqual(got.History, orig.History) {
		t.Fatalf("resumed request differs:\n%+v\n%+v", got.History, orig.History)
	}
}

// Retried attempts are recorded in the step event and the transcript, and
// a failure's attempts in the result event and the end record.
func TestRetriesRecorded(t *testing.T) {
	attempts := []provider.Attempt{{Attempt: 1, Error: "openai: HTTP 503: busy", WaitMS: 500}}
	p := fnProvider(func(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
		if req.Step == 1 {
			return &provider.Reply{Text: `{"action":"read_file","path":"a.txt"}`, Retries: attempts}, nil
		}
		return nil, &provider.Error{Provider: "openai", Err: os.ErrDeadlineExceeded, Retries: append(attempts, provider.Attempt{Attempt: 2, Error: "openai: HTTP 503: busy"})}
	})
	tp := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := transcript.Create(tp)
	if err != nil {
		t.Fatal(err)
	}
	r := runLoop(t, context.Background(), config(workspace(t)), p, agent.Options{Transcript: w})
	w.Close()
	if !reflect.DeepEqual(r.events[0].Retries, attempts) {
		t.Fatalf("step event retries %+v", r.events[0].Retries)
	}
	if last := r.events[len(r.events)-1]; last.Type != agent.EventResult || len(last.Retries) != 2 {
		t.Fatalf("result event %+v", last)
	}
	validateTranscript(t, tp)
	recs, _ := transcript.Read(tp)
	if len(recs[1].Retries) != 1 || len(recs[len(recs)-1].Retries) != 2 {
		t.Fatalf("transcript retries: step %+v end %+v", recs[1].Retries, recs[len(recs)-1].Retries)
	}
}

// A reply that used the provider CLI's own (denied) tools is told to the
// model as a rejected step (refusal tool); MaxFormatErrors of them in a
// row end the run as denied, and a real decision in between resets it.
func TestDeniedToolReplies(t *testing.T) {
	denied := &provider.Reply{Denied: []string{"run_command (Run command)"}}
	p, _ := scripted(denied, &provider.Reply{Text: `{"action":"read_file","path":"a.txt"}`}, denied, denied, denied)
	cfg := config(workspace(t))
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	want := "rejected:tool observation rejected:tool rejected:tool rejected:tool result"
	if got := strings.Join(r.outcomes(), " "); got != want {
		t.Fatalf("outcomes %s; want %s", got, want)
	}
	if r.res.Status != agent.StatusDenied || r.res.Steps != 5 || !strings.Contains(r.res.Err.Error(), "run_command (Run command)") {
		t.Fatalf("result %+v", r.res)
	}
}

// A recorded run with truncated and denied-tool steps replays as a
// cassette: the cassette gives back the cut-off and the denial, so the
// requests hash the same.
func TestCassetteReplaysTruncatedAndDenied(t *testing.T) {
	p, _ := scripted(
		&provider.Reply{Text: `{"action":"finish","summary":"aaa`, Truncated: true},
		&provider.Reply{Denied: []string{"run_command (Run command)"}},
		&provider.Reply{Text: `{"action":"read_file","path":"a.txt"}`},
		&provider.Reply{Text: `{"action":"verify"}`},
		&provider.Reply{Text: `{"action":"finish","summary":"done"}`},
	)
	tp := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := transcript.Create(tp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(workspace(t))
	cfg.Verify = []string{"true"}
	first := runLoop(t, context.Background(), cfg, p, agent.Options{Transcript: w})
	w.Close()
	validateTranscript(t, tp)
	c, err := mock.Cassette(tp)
	if err != nil {
		t.Fatal(err)
	}
	again := runLoop(t, context.Background(), cfg, c, agent.Options{})
	if first.res.Status != agent.StatusFinished || again.res.Status != agent.StatusFinished || strings.Join(again.outcomes(), " ") != strings.Join(first.outcomes(), " ") {
		t.Fatalf("replay %v %v; recorded %v %v", again.res, again.outcomes(), first.res, first.outcomes())
	}
}

// A reply the server ended without a finish reason is a cut reply, told to
// the model as such; a complete decision is taken whatever the server said
// about how the reply ended (a one-token decision can come back with
// finish_reason "length").
func TestServerEndedReplies(t *testing.T) {
	read := `{"action":"read_file","path":"a.txt"}`
	p, reqs := scripted(
		&provider.Reply{Text: `{"action":"finish","summary":"zzzzzzzz`, Ended: true},
		&provider.Reply{Text: read, Truncated: true},
		&provider.Reply{Text: read, Ended: true, Notes: []string{"context: fitted to the server's 2048 tokens"}},
		&provider.Reply{Text: ``, Ended: true},
		&provider.Reply{Text: read},
	)
	ws := workspace(t)
	cfg := config(ws)
	cfg.MaxSteps = 5
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	want := "truncated observation observation truncated observation result"
	if got := strings.Join(r.outcomes(), " "); got != want {
		t.Fatalf("outcomes %s; want %s", got, want)
	}
	if r.res.Status != agent.StatusStepLimit {
		t.Fatalf("result %+v", r.res)
	}
	obs := (*reqs)[1].History[0].Observation
	if !strings.Contains(obs, "the server ended your reply without finishing it") || strings.Contains(obs, "token limit after") {
		t.Fatalf("observation of a server-ended reply: %s", obs)
	}
	var notes []string
	for _, ev := range r.events {
		if ev.Type == agent.EventStep && len(ev.Notes) > 0 {
			notes = append(notes, ev.Notes...)
		}
	}
	if !reflect.DeepEqual(notes, []string{"context: fitted to the server's 2048 tokens"}) {
		t.Fatalf("notes on step events: %q", notes)
	}
}
