package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agentReplies are the decisions a loopback OpenAI-compatible server
// hands out, one per step: a read, a refused path, an edit, a verify that
// passes, then a tool that keeps the run alive while Prometheus scrapes.
var agentReplies = []string{
	`{"action":"read_file","path":"a.txt","reason":"look"}`,
	`{"action":"read_file","path":"../outside.txt","reason":"escape"}`,
	`{"action":"replace_text","path":"a.txt","old":"hello","new":"bye","reason":"edit"}`,
	`{"action":"verify"}`,
	`{"action":"run_tool","program":"sleep","args":["60"],"reason":"wait"}`,
	`{"action":"finish","summary":"done"}`,
}

// chatServer answers chat completions with agentReplies in order, reply i
// reporting 100(i+1) input and 10(i+1) output tokens.
func chatServer(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || i >= len(agentReplies) {
			http.NotFound(w, r)
			return
		}
		content, _ := json.Marshal(agentReplies[i])
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			i, content, 100*(i+1), 10*(i+1), 110*(i+1))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestPrometheusScrapesAgent: a real Prometheus scrapes artagent run
// --metrics while the run waits in its fifth step; the series it holds
// match the run's own AgentEvents (steps by action, refusals, verify,
// tokens, provider calls), promtool accepts the exposition, and a second
// artagent on the same address exits 125 before it starts.
func TestPrometheusScrapesAgent(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startPrometheus(t, "artagent", target)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "ART_HOME="+filepath.Join(dir, "home"), "ART_EVENTS=", "TRACEPARENT=", "GORACE=atexit_sleep_ms=0")
	run := exec.CommandContext(ctx, filepath.Join(binDir, "artagent"), "--output", "json", "run", "--workspace", ws, "--task", "edit a.txt",
		"--provider", "openai", "--base-url", chatServer(t), "--model", "m", "--no-server-context",
		"--allow", "sleep", "--verify", "cat a.txt", "--metrics", target)
	run.Env = env
	stderr, f := newOutFile(t, "artagent.err")
	run.Stderr = f
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		run.Process.Signal(syscall.SIGINT)
		run.Wait()
	}()

	// The events up to the step that sleeps: its step event is emitted
	// (and counted) before the tool starts.
	type event struct {
		Type      string `json:"type"`
		Action    string `json:"action"`
		Refusal   string `json:"refusal"`
		Passed    *bool  `json:"passed"`
		LatencyMS *int64 `json:"latency_ms"`
		Usage     *struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	steps := map[string]int{}
	refusals := map[string]int{}
	var in, out, passed, calls int64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not an event: %s", sc.Bytes())
		}
		switch ev.Type {
		case "step":
			steps[ev.Action]++
			if ev.Usage != nil {
				in, out = in+ev.Usage.Input, out+ev.Usage.Output
			}
			if ev.LatencyMS != nil {
				calls++
			}
		case "rejected":
			refusals[ev.Refusal]++
		case "verify":
			if ev.Passed != nil && *ev.Passed {
				passed++
			}
		case "result":
			t.Fatalf("the run ended before it was scraped; stderr:\n%s", stderr)
		}
		if ev.Type == "step" && ev.Action == "run_tool" {
			break
		}
	}
	if steps["run_tool"] != 1 {
		t.Fatalf("no run_tool step in the events (%v); stderr:\n%s", sc.Err(), stderr)
	}
	// The events' own account: what the replies above make the loop do.
	if steps["read_file"] != 2 || steps["replace_text"] != 1 || steps["verify"] != 1 || refusals["path"] != 1 || passed != 1 ||
		in != 100+200+300+400+500 || out != 10+20+30+40+50 || calls != 5 {
		t.Fatalf("events: steps %v refusals %v passed %d tokens %d/%d calls %d", steps, refusals, passed, in, out, calls)
	}

	deadline := time.Now().Add(30 * time.Second)
	for p.query(t, `sum(artagent_steps_total{job="artagent"})`) != 5 {
		if time.Now().After(deadline) {
			t.Fatalf("prometheus never saw 5 steps; artagent stderr:\n%s", stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, c := range []struct {
		expr string
		want int64
	}{
		{`artagent_steps_total{action="read_file"}`, int64(steps["read_file"])},
		{`artagent_steps_total{action="replace_text"}`, int64(steps["replace_text"])},
		{`artagent_steps_total{action="verify"}`, int64(steps["verify"])},
		{`artagent_steps_total{action="run_tool"}`, int64(steps["run_tool"])},
		{`artagent_steps_total{action="finish"}`, 0},
		{`artagent_refusals_total{kind="path"}`, int64(refusals["path"])},
		{`sum(artagent_refusals_total)`, 1},
		{`artagent_verify_total{result="passed"}`, passed},
		{`artagent_verify_total{result="failed"}`, 0},
		{`artagent_provider_tokens_total{kind="input"}`, in},
		{`artagent_provider_tokens_total{kind="output"}`, out},
		{`artagent_provider_request_duration_seconds_count`, calls},
		{`sum(artagent_runs_total)`, 0},
	} {
		if got := p.query(t, c.expr); got != float64(c.want) {
			t.Errorf("prometheus %s = %v; the run's events say %d", c.expr, got, c.want)
		}
	}
	exposition(t, target)

	// The same address again: busy, exit 125 before any work.
	busy := exec.CommandContext(ctx, filepath.Join(binDir, "artagent"), "mcp", "--workspace", ws, "--verify", "true", "--metrics", target)
	busy.Env = env
	msg, err := busy.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(msg), "--metrics") {
		t.Errorf("artagent mcp --metrics on a busy address: %v\n%s; want exit 125 naming --metrics", err, msg)
	}

	// SIGINT ends the waiting run: interrupted, 130.
	run.Process.Signal(syscall.SIGINT)
	if err := run.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("artagent run after SIGINT: %v; want exit 130\n%s", err, stderr)
	}
}

// TestAgentMetricsMCP: an MCP session the test drives over stdio counts
// its calls as steps: two reads (one refused: its path escapes the
// workspace), a verify that passes; the exposition says so (and no
// provider time: there is no provider) while the session is open, and
// promtool accepts it.
func TestAgentMetricsMCP(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed: .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool is not installed (apt-get install prometheus)")
	}
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mcp := exec.CommandContext(ctx, filepath.Join(binDir, "artagent"), "mcp", "--workspace", ws, "--verify", "cat a.txt", "--metrics", target)
	mcp.Env = append(os.Environ(), "ART_HOME="+filepath.Join(dir, "home"), "ART_EVENTS=", "TRACEPARENT=", "GORACE=atexit_sleep_ms=0")
	stderr, f := newOutFile(t, "mcp.err")
	mcp.Stderr = f
	in, err := mcp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := mcp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		mcp.Wait()
	}()
	replies := bufio.NewScanner(outPipe)
	replies.Buffer(nil, 1<<20)
	call := func(id int, method, params string) {
		t.Helper()
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		for replies.Scan() {
			var r struct {
				ID    *int            `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(replies.Bytes(), &r) == nil && r.ID != nil && *r.ID == id {
				if r.Error != nil {
					t.Fatalf("%s: %s", method, r.Error)
				}
				return
			}
		}
		t.Fatalf("%s: no reply (%v); stderr:\n%s", method, replies.Err(), stderr)
	}
	call(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call(2, "tools/call", `{"name":"read_file","arguments":{"path":"a.txt"}}`)
	call(3, "tools/call", `{"name":"read_file","arguments":{"path":"../outside.txt"}}`)
	call(4, "tools/call", `{"name":"verify","arguments":{}}`)

	body := exposition(t, target)
	for _, want := range []string{
		`artagent_steps_total{action="read_file"} 2`,
		`artagent_steps_total{action="verify"} 1`,
		`artagent_steps_total{action="other"} 0`,
		`artagent_refusals_total{kind="path"} 1`,
		`artagent_verify_total{result="passed"} 1`,
		`artagent_provider_request_duration_seconds_count 0`,
		`artagent_runs_total{status="cancelled"} 0`,
	} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s\nstderr:\n%s", body, stderr)
	}
}
