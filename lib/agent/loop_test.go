package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/mock"
)

type fnProvider func(ctx context.Context, req *provider.Request) (*provider.Reply, error)

func (f fnProvider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	return f(ctx, req)
}

func TestFormatErrors(t *testing.T) {
	ws := workspace(t)
	p := mock.New(
		`not json`,
		`{"action":"verify","program":"true"}`,   // the model cannot swap verify's program
		`{"action":"run_tool","program":"true"}`, // a good one resets the count
		"```json",
		`{"action":"read_file","path":"a.txt"} trailing`,
		`{"action":"finish"}`,
		`{"action":"run_tool","program":"true"}`,
	)
	cfg := config(ws)
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	want := "rejected:format rejected:format observation rejected:format rejected:format rejected:format result"
	if got := strings.Join(r.outcomes(), " "); got != want {
		t.Fatalf("outcomes %s; want %s", got, want)
	}
	if r.res.Status != agent.StatusFormatError || r.res.Steps != 6 || !strings.Contains(r.res.Err.Error(), "3 malformed decisions in a row") {
		t.Fatalf("result %+v", r.res)
	}
	// The raw reply is kept in the step event when it did not decode.
	if r.events[0].Reply == nil || *r.events[0].Reply != "not json" || r.events[0].Decision != nil {
		t.Errorf("step event of a malformed reply: %+v", r.events[0])
	}
}

func TestStepLimit(t *testing.T) {
	ws := workspace(t)
	p := mock.New(strings.Repeat(`{"action":"run_tool","program":"true"}`+"\n", 5))
	cfg := config(ws)
	cfg.MaxSteps = 2
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	if r.res.Status != agent.StatusStepLimit || r.res.Steps != 2 || len(p.Requests()) != 2 {
		t.Fatalf("result %+v after %d requests", r.res, len(p.Requests()))
	}
}

func TestTokenBudget(t *testing.T) {
	ws := workspace(t)
	calls := 0
	p := fnProvider(func(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
		calls++
		return &provider.Reply{Text: `{"action":"run_tool","program":"true"}`, Usage: &provider.Usage{InputTokens: 50, OutputTokens: 10}, Latency: 7 * time.Millisecond}, nil
	})
	cfg := config(ws)
	cfg.MaxTokens = 100
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	if r.res.Status != agent.StatusBudgetLimit || calls != 2 || r.res.Usage == nil || r.res.Usage.TotalTokens != 120 || r.res.Latency != 14*time.Millisecond {
		t.Fatalf("result %+v usage %+v after %d calls", r.res, r.res.Usage, calls)
	}
	last := r.events[len(r.events)-1]
	if last.Usage == nil || last.Usage.InputTokens != 100 || *last.LatencyMS != 14 {
		t.Fatalf("result event %+v", last)
	}
}

func TestProviderErrorKeepsVerifiedEdit(t *testing.T) {
	ws := workspace(t)
	p := mock.New(
		`{"action":"replace_text","path":"a.txt","old":"old","new":"new"}`,
		`{"action":"verify"}`,
		`{"error":"model went away"}`,
	)
	r := runLoop(t, context.Background(), config(ws), p, agent.Options{})
	if r.res.Status != agent.StatusProviderError || !r.res.Verified || r.res.Edits != 1 || r.res.ExitCode() != 1 ||
		!strings.Contains(r.res.Err.Error(), "model went away") {
		t.Fatalf("result %+v", r.res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello new world\n" {
		t.Fatalf("verified edit was not kept: %q", b)
	}
}

func TestProviderErrorClasses(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want agent.Status
	}{
		{&provider.Error{Provider: "x", Err: provider.ErrTimeout}, agent.StatusTimeout},
		{&provider.Error{Provider: "x", Err: provider.ErrDenied}, agent.StatusDenied},
		{&provider.Error{Provider: "x", Err: provider.ErrTooLarge}, agent.StatusProviderError},
		{errors.New("plain"), agent.StatusProviderError},
	} {
		p := fnProvider(func(ctx context.Context, req *provider.Request) (*provider.Reply, error) { return nil, tt.err })
		r := runLoop(t, context.Background(), config(workspace(t)), p, agent.Options{})
		if r.res.Status != tt.want || r.res.Steps != 0 {
			t.Errorf("provider error %v: status %s steps %d; want %s", tt.err, r.res.Status, r.res.Steps, tt.want)
		}
	}
}

func TestVerifyFailureKeepsDebt(t *testing.T) {
	ws := workspace(t)
	p := mock.New(
		`{"action":"replace_text","path":"a.txt","old":"old","new":"odd"}`,
		`{"action":"verify"}`,
		`{"action":"finish","summary":"x"}`,
	)
	cfg := config(ws)
	cfg.MaxSteps = 3
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	if got := strings.Join(r.outcomes(), " "); got != "observation verify:fail rejected:debt result" {
		t.Fatalf("outcomes %s", got)
	}
	if r.res.Status != agent.StatusStepLimit || r.res.Verified || !r.res.Debt {
		t.Fatalf("result %+v", r.res)
	}
	v := r.events[3]
	if v.ExitCode == nil || *v.ExitCode != 1 || !strings.Contains(*v.Observation, "verification failed: debt remains open") {
		t.Fatalf("verify event %+v", v)
	}
}

// A passing verify followed by a new edit reopens the debt.
func TestNewEditReopensDebt(t *testing.T) {
	ws := workspace(t)
	p := mock.New(
		`{"action":"replace_text","path":"a.txt","old":"old","new":"new"}`,
		`{"action":"verify"}`,
		`{"action":"replace_text","path":"a.txt","old":"hello","new":"hi"}`,
		`{"action":"finish","summary":"x"}`,
		`{"action":"verify"}`,
		`{"action":"finish","summary":"y"}`,
	)
	r := runLoop(t, context.Background(), config(ws), p, agent.Options{})
	if got := strings.Join(r.outcomes(), " "); got != "observation verify:pass observation rejected:debt verify:pass result" {
		t.Fatalf("outcomes %s", got)
	}
	if r.res.Status != agent.StatusFinished || !r.res.Verified || r.res.Edits != 2 || r.res.Summary != "y" {
		t.Fatalf("result %+v", r.res)
	}
}

func TestObservationTruncated(t *testing.T) {
	ws := workspace(t)
	p := mock.New(`{"action":"run_tool","program":"sh","args":["-c","i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"]}`)
	cfg := config(ws)
	cfg.ObservationBytes = 1000
	cfg.MaxSteps = 1
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	obs := r.events[1]
	// The runner cut the tool's output (its marker says how much); the
	// observation as a whole stays within the bound.
	if len(*obs.Observation) > 1000 || obs.Elided < 18000 || !strings.Contains(*obs.Observation, "bytes omitted]") ||
		!strings.HasPrefix(*obs.Observation, "$ sh -c") || !strings.HasSuffix(*obs.Observation, "[exit 0]") {
		t.Fatalf("observation (%d bytes, %d elided):\n%s", len(*obs.Observation), obs.Elided, *obs.Observation)
	}
	// Exactly what the runner's marker says was omitted.
	if !strings.Contains(*obs.Observation, fmt.Sprintf("[artexec: %d bytes omitted]", obs.Elided)) {
		t.Errorf("elided %d does not match the runner's marker", obs.Elided)
	}
	if got := p.Requests()[0]; len(got.History) != 0 {
		t.Fatal("first request has history")
	}
}

func TestDeadline(t *testing.T) {
	ws := workspace(t)
	p := mock.New(`{"action":"run_tool","program":"sleep","args":["30"]}`)
	cfg := config(ws)
	cfg.Deadline = 300 * time.Millisecond
	start := time.Now()
	r := runLoop(t, context.Background(), cfg, p, agent.Options{})
	if r.res.Status != agent.StatusTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("result %+v after %v", r.res, time.Since(start))
	}
	if obs := r.events[1]; !strings.Contains(*obs.Observation, "[cancelled: process group killed") {
		t.Fatalf("tool observation %q", *obs.Observation)
	}
}

// Cancelling the run kills the running tool's whole process group.
func TestCancelKillsTool(t *testing.T) {
	ws := workspace(t)
	p := mock.New(`{"action":"run_tool","program":"sh","args":["-c","sleep 30 & echo $! > child.pid; wait"]}`)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		pidFile := filepath.Join(ws, "child.pid")
		for i := 0; i < 500; i++ {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel(errors.New("operator pressed ^C"))
	}()
	r := runLoop(t, ctx, config(ws), p, agent.Options{})
	if r.res.Status != agent.StatusCancelled || r.res.ExitCode() != 130 || !strings.Contains(r.res.Err.Error(), "operator pressed") {
		t.Fatalf("result %+v", r.res)
	}
	b, err := os.ReadFile(filepath.Join(ws, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("pid file %q", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the tool's background child %d survived cancellation", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConfigRefused(t *testing.T) {
	ws := workspace(t)
	p := mock.New(`{"action":"verify"}`)
	for name, mut := range map[string]func(*agent.Config){
		"blank task":        func(c *agent.Config) { c.Task = " " },
		"no verify":         func(c *agent.Config) { c.Verify = nil },
		"allow path":        func(c *agent.Config) { c.Allow = []string{"/bin/sh"} },
		"tiny observations": func(c *agent.Config) { c.ObservationBytes = 10 },
		"missing workspace": func(c *agent.Config) { c.Workspace = filepath.Join(ws, "nope") },
		"verify not found":  func(c *agent.Config) { c.Verify = []string{"no-such-program-xyz"} },
	} {
		cfg := config(ws)
		mut(&cfg)
		if _, err := agent.Run(context.Background(), cfg, p, agent.Options{}); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 1000) // 2000 bytes
	out, n := agent.Truncate(s, 300)
	if len(out) > 300 || !utf8.ValidString(out) || n != int64(len(s)-len(out)+len(markerOf(n))) {
		t.Fatalf("Truncate: %d bytes, elided %d, valid %v", len(out), n, utf8.ValidString(out))
	}
	if out2, n2 := agent.Truncate(s, 300); out2 != out || n2 != n {
		t.Fatal("Truncate is not deterministic")
	}
	if out, n := agent.Truncate("short", 300); out != "short" || n != 0 {
		t.Fatalf("Truncate(short) = %q, %d", out, n)
	}
}

func markerOf(n int64) string { return "\n[... " + strconv.FormatInt(n, 10) + " bytes elided ...]\n" }

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("日本語", 100), 64)
	f.Add("\xff\xfe\x80abc", 40)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < agent.MinObservationBytes/8 || max > 1<<20 {
			return
		}
		out, n := agent.Truncate(s, max)
		if len(s) <= max {
			if out != s || n != 0 {
				t.Fatalf("short input changed")
			}
			return
		}
		if len(out) > max {
			t.Fatalf("Truncate(%d bytes, %d) = %d bytes", len(s), max, len(out))
		}
		if int64(len(out))-int64(len(markerOf(n))) != int64(len(s))-n {
			t.Fatalf("elided count %d does not match: in %d, out %d", n, len(s), len(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Truncate split a UTF-8 sequence")
		}
		h := strings.Index(out, markerOf(n))
		if h < 0 || !strings.HasPrefix(s, out[:h]) || !strings.HasSuffix(s, out[h+len(markerOf(n)):]) {
			t.Fatalf("output is not head + marker + tail of the input")
		}
	})
}

// A task is cancelled from outside (artq cancel, a supervisor's SIGTERM to
// every process of the task): the agent and its tool get the signal at
// once — the tool its SIGTERM, or its supervisor's SIGKILL — and the
// tool's death can reach the loop before the agent's own cancellation
// does. The run still ends cancelled, without another step; a tool that
// dies of a signal with no cancellation after it does not end the run.
func TestToolSignalledWithTheRunIsCancelled(t *testing.T) {
	for _, tc := range []struct {
		sig       string
		cancelled bool
	}{{"TERM", true}, {"KILL", true}, {"TERM", false}} {
		script := []string{
			`{"action":"run_tool","program":"sh","args":["-c","touch died; kill -` + tc.sig + ` $$"]}`,
			`{"action":"run_tool","program":"sh","args":["-c","touch second"]}`,
		}
		cancelled := tc.cancelled
		ws := workspace(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		if cancelled {
			go func() {
				waitFile(t, filepath.Join(ws, "died"))
				time.Sleep(30 * time.Millisecond) // the loop has seen the tool's end by now
				cancel(errors.New("SIGTERM from the supervisor"))
			}()
		}
		r := runLoop(t, ctx, config(ws), mock.New(script...), agent.Options{})
		cancel(nil)
		_, err := os.Stat(filepath.Join(ws, "second"))
		if cancelled && (r.res.Status != agent.StatusCancelled || r.res.ExitCode() != 130 || err == nil) {
			t.Fatalf("cancelled after the tool's SIG%s: result %+v, second step ran: %v", tc.sig, r.res, err == nil)
		}
		if !cancelled && (r.res.Status == agent.StatusCancelled || err != nil) {
			t.Fatalf("tool's own SIG%s, no cancel: result %+v, second step ran: %v", tc.sig, r.res, err == nil)
		}
	}
}
