package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/mock"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	goleak.VerifyTestMain(m)
}

// workspace makes a directory with a.txt = "hello old world\n".
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello old world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func config(ws string) agent.Config {
	return agent.Config{
		Task:      "replace old with new in a.txt",
		Workspace: ws,
		Allow:     []string{"true", "cat", "sleep", "sh"},
		Verify:    []string{"grep", "-q", "new", "a.txt"},
		Provider:  "mock",
	}
}

type run struct {
	res    *agent.Result
	events []agent.Event
	raw    string
}

func runLoop(t *testing.T, ctx context.Context, cfg agent.Config, p provider.Provider, opt agent.Options) *run {
	t.Helper()
	var out bytes.Buffer
	opt.Events = &out
	res, err := agent.Run(ctx, cfg, p, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	r := &run{res: res, raw: out.String()}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		validateEvent(t, sc.Bytes())
		var e agent.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event %s: %v", sc.Text(), err)
		}
		r.events = append(r.events, e)
	}
	last := r.events[len(r.events)-1]
	if last.Type != agent.EventResult || last.Status != res.Status {
		t.Fatalf("last event %+v; want the result", last)
	}
	return r
}

// types lists "type[:refusal]" of the events after the step events.
func (r *run) outcomes() []string {
	var s []string
	for _, e := range r.events {
		switch e.Type {
		case agent.EventStep:
		case agent.EventRejected:
			s = append(s, "rejected:"+string(e.Refusal))
		case agent.EventVerify:
			if *e.Passed {
				s = append(s, "verify:pass")
			} else {
				s = append(s, "verify:fail")
			}
		default:
			s = append(s, string(e.Type))
		}
	}
	return s
}

func TestVerifiedFinish(t *testing.T) {
	ws := workspace(t)
	p := mock.New(
		`{"action":"read_file","path":"a.txt"}`,
		`{"action":"replace_text","path":"a.txt","old":"old","new":"new","reason":"the task"}`,
		`{"action":"finish","summary":"too early"}`,
		`{"action":"run_tool","program":"true"}`,
		`{"action":"finish","summary":"still too early"}`,
		`{"action":"verify"}`,
		`{"action":"finish","summary":"done"}`,
	)
	r := runLoop(t, context.Background(), config(ws), p, agent.Options{})
	want := []string{"observation", "observation", "rejected:debt", "observation", "rejected:debt", "verify:pass", "result"}
	if got := r.outcomes(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("outcomes %v; want %v\n%s", got, want, r.raw)
	}
	res := r.res
	if res.Status != agent.StatusFinished || !res.Verified || res.Steps != 7 || res.Edits != 1 || res.Debt || res.Summary != "done" || res.ExitCode() != 0 {
		t.Fatalf("result %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello new world\n" {
		t.Fatalf("a.txt = %q", b)
	}
	// The model saw its history and the debt flag at each step.
	reqs := p.Requests()
	if len(reqs) != 7 || len(reqs[6].History) != 6 || !reqs[2].Debt || reqs[1].Debt || reqs[6].Debt {
		t.Fatalf("requests: %d, history %d, debt %v %v %v", len(reqs), len(reqs[6].History), reqs[1].Debt, reqs[2].Debt, reqs[6].Debt)
	}
	if obs := reqs[1].History[0].Observation; obs != "a.txt (16 bytes):\nhello old world\n" {
		t.Errorf("read observation %q", obs)
	}
	if obs := reqs[4].History[3].Observation; obs != "$ true\n[exit 0]" {
		t.Errorf("run_tool observation %q", obs)
	}
}

func TestRefusals(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	p := mock.New(
		`{"action":"read_file","path":"../secret"}`,
		`{"action":"read_file","path":"`+outside+`"}`,
		`{"action":"read_file","path":"link"}`,
		`{"action":"run_tool","program":"/bin/true"}`,
		`{"action":"run_tool","program":"rm","args":["-rf","."]}`,
		`{"action":"run_tool","program":"grep","args":["x","a.txt"]}`,
		`{"action":"replace_text","path":"a.txt","old":"l","new":"L"}`,
		`{"action":"replace_text","path":"a.txt","old":"","new":"L"}`,
		`{"action":"replace_text","path":"a.txt","old":"absent","new":"L"}`,
		`{"action":"replace_text","path":"new.txt","old":"x","new":"y"}`,
		`{"action":"replace_text","path":"link","old":"SECRET","new":"y"}`,
		`{"action":"finish","summary":"nothing changed"}`,
	)
	r := runLoop(t, context.Background(), config(ws), p, agent.Options{})
	want := "rejected:path rejected:path rejected:path rejected:program rejected:program rejected:program " +
		"rejected:match rejected:match rejected:match rejected:file rejected:path result"
	if got := strings.Join(r.outcomes(), " "); got != want {
		t.Fatalf("outcomes\n%s\nwant\n%s\n%s", got, want, r.raw)
	}
	// Finishing without edits is allowed, but only a verified finish exits 0.
	if r.res.Status != agent.StatusFinished || r.res.Verified || r.res.ExitCode() != exitcode.Failed || r.res.Edits != 0 {
		t.Fatalf("result %+v", r.res)
	}
	if b, _ := os.ReadFile(outside); string(b) != "SECRET" {
		t.Fatal("outside file changed")
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("new.txt was created")
	}
	for _, e := range r.events {
		if e.Observation != nil && strings.Contains(*e.Observation, "SECRET") {
			t.Fatalf("an outside file's content reached an observation: %q", *e.Observation)
		}
	}
}
