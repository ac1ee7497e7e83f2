package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/agent/mcpserver"
	"github.com/art-runtime/art/lib/agent/transcript"
)

// goProject copies testdata/agent/goproject (Add returns a - b) into a
// new directory and returns it.
func goProject(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "calc")
	if err := os.CopyFS(ws, os.DirFS("../../testdata/agent/goproject")); err != nil {
		t.Fatal(err)
	}
	return ws
}

// goEnv is what `go test` as the verify command needs, passed with --env,
// and a state home of the test's own (ART_HOME, where the verification
// ledgers are), the same for every session the test starts.
func goEnv(t *testing.T) []string {
	t.Helper()
	return append(os.Environ(), "GOCACHE="+systest.GoEnv(t, "GOCACHE"), "GOPATH="+filepath.Join(t.TempDir(), "gopath"),
		"GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GORACE="+systest.NoExitSleep(), "ART_HOME="+stateHome(t))
}

var stateHomes sync.Map // *testing.T → its ART_HOME

func stateHome(t *testing.T) string {
	if h, ok := stateHomes.Load(t); ok {
		return h.(string)
	}
	h := t.TempDir()
	stateHomes.Store(t, h)
	t.Cleanup(func() { stateHomes.Delete(t) })
	return h
}

// session starts `artagent mcp` over stdio on ws with the SDK's client.
func session(t *testing.T, ws string, extra ...string) (*mcp.ClientSession, *exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command("artagent", mcpArgs(ws, filepath.Join(t.TempDir(), "mcp.jsonl"), extra...)...)
	cmd.Env = goEnv(t)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	return cs, cmd, stderr
}

// TestMCPDebtAcrossSessions: verification debt outlives a stdio session.
// An edit in one session, then a finish in the next (as each MCP Inspector
// CLI call is a new `artagent mcp`), is refused; the second session sees
// the debt in status, and a passing verify there clears it. While one
// session is open, another on the same workspace is refused.
func TestMCPDebtAcrossSessions(t *testing.T) {
	ws := goProject(t)
	cs, cmd, stderr := session(t, ws)
	if _, out := callTool(t, cs, "replace_text", map[string]any{"path": "calc.go", "old": "return a - b", "new": "return a + b"}); !out.Debt {
		t.Fatalf("replace_text: %+v", out)
	}
	// A second session while the first is open is refused, in one line.
	second := exec.Command("artagent", mcpArgs(ws, filepath.Join(t.TempDir(), "x.jsonl"))...)
	second.Env = goEnv(t)
	out, err := second.CombinedOutput()
	if code := second.ProcessState.ExitCode(); err == nil || code != 3 || !strings.Contains(string(out), "another session holds the workspace's verification ledger") {
		t.Fatalf("a concurrent session: exit %d, %s", code, out)
	}
	cs.Close()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("first session exited %d\n%s", code, stderr)
	}

	cs, cmd, stderr = session(t, ws)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"debt":true`) {
		t.Fatalf("status in the next session: %s", b)
	}
	if res, out := callTool(t, cs, "finish", map[string]any{"summary": "fixed"}); !res.IsError || out.Refusal != "debt" || out.Outcome == "finished" {
		t.Fatalf("finish in the next session with the debt open: %+v", out)
	}
	if _, out := callTool(t, cs, "verify", map[string]any{}); out.Passed == nil || !*out.Passed || out.Debt {
		t.Fatalf("verify: %+v\n%s", out, stderr)
	}
	if res, out := callTool(t, cs, "finish", map[string]any{"summary": "fixed Add"}); res.IsError || out.Outcome != "finished" {
		t.Fatalf("finish after verify: %+v", out)
	}
	cs.Close()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("second session exited %d after a verified finish\n%s", code, stderr)
	}
	// And a third session starts clear.
	cs, _, _ = session(t, ws)
	defer cs.Close()
	if res, out := callTool(t, cs, "finish", map[string]any{"summary": "nothing to do"}); res.IsError || out.Outcome != "finished" {
		t.Fatalf("finish in a session after the debt was cleared: %+v", out)
	}
}

func mcpArgs(ws, tr string, extra ...string) []string {
	return append([]string{"mcp", "--workspace", ws, "--allow", "cat", "--allow", "sh", "--allow", "sleep",
		"--verify", "go test ./...", "--env", "GOCACHE", "--env", "GOPATH", "--env", "GOFLAGS", "--env", "GOTOOLCHAIN",
		"--transcript", tr}, extra...)
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, mcpserver.StepOutput) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var out mcpserver.StepOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return res, out
}

// TestMCPStdio drives the real `artagent mcp` subprocess over stdio with
// the SDK's client: a cancelled sleep leaves no survivor, an escape and an
// early finish are refused, the fix verifies and finishes, and the process
// exits 0 (a verified finish) when the client leaves.
func TestMCPStdio(t *testing.T) {
	ws := goProject(t)
	tr := filepath.Join(t.TempDir(), "mcp.jsonl")
	cmd := exec.Command("artagent", mcpArgs(ws, tr)...)
	cmd.Env = goEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// Cancellation over the wire kills the tool's process group.
	mark := fmt.Sprintf("%d.%09d", 700, time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_tool", Arguments: map[string]any{
			"program": "sh", "args": []string{"-c", "sleep " + mark + " & sleep " + mark + "; wait"}}})
		errc <- err
	}()
	waitPids(t, mark, 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	noSurvivor(t, mark)

	if res, out := callTool(t, cs, "read_file", map[string]any{"path": "../calc/../../etc/passwd"}); !res.IsError || out.Refusal != "path" {
		t.Errorf("escape: %+v", out)
	}
	if _, out := callTool(t, cs, "read_file", map[string]any{"path": "calc.go"}); !strings.Contains(out.Observation, "return a - b") {
		t.Fatalf("read_file: %+v", out)
	}
	if _, out := callTool(t, cs, "replace_text", map[string]any{"path": "calc.go", "old": "return a - b", "new": "return a + b"}); !out.Debt {
		t.Fatalf("replace_text: %+v", out)
	}
	if res, out := callTool(t, cs, "finish", map[string]any{"summary": "fixed"}); !res.IsError || out.Refusal != "debt" {
		t.Fatalf("finish before verify: %+v", out)
	}
	if _, out := callTool(t, cs, "verify", map[string]any{}); out.Passed == nil || !*out.Passed || out.Debt {
		t.Fatalf("verify: %+v\n%s", out, stderr.String())
	}
	if res, out := callTool(t, cs, "finish", map[string]any{"summary": "fixed Add"}); res.IsError || out.Outcome != "finished" {
		t.Fatalf("finish: %+v", out)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("artagent mcp exited %d after a verified finish; want 0\n%s", code, stderr.String())
	}
	for _, want := range []string{"step 2/30 read_file ../calc/../../etc/passwd: rejected (path)", "step 5/30 finish: rejected (debt); debt open", "finished after 7 steps, 1 edit, verified"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	recs, err := transcript.Read(tr)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "finished" {
		t.Errorf("last record %+v", last)
	}
}

// TestMCPStdioLeaveWithoutFinish: a client that leaves without a finish
// ends the run cancelled, and the process exits 1 (not 130: nobody
// interrupted it).
func TestMCPStdioLeaveWithoutFinish(t *testing.T) {
	ws := goProject(t)
	tr := filepath.Join(t.TempDir(), "mcp.jsonl")
	cmd := exec.Command("artagent", mcpArgs(ws, tr)...)
	cmd.Env = goEnv(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "replace_text", map[string]any{"path": "calc.go", "old": "return a - b", "new": "return a + b"})
	cs.Close()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d; want 1", code)
	}
	recs, err := transcript.Read(tr)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "cancelled" || !strings.Contains(last.Error, "closed the session before a finish") {
		t.Errorf("last record %+v", last)
	}
}

// TestMCPHTTP serves streamable HTTP on a loopback port chosen by the
// kernel, drives it with the SDK's client, and stops on SIGINT (130).
func TestMCPHTTP(t *testing.T) {
	ws := goProject(t)
	tr := filepath.Join(t.TempDir(), "mcp.jsonl")
	cmd := exec.Command("artagent", mcpArgs(ws, tr, "--listen", "127.0.0.1:0")...)
	cmd.Env = goEnv(t)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(errPipe)
	var url string
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "at http://"); ok {
			url = "http://" + rest
			break
		}
	}
	if url == "" {
		t.Fatal("no listening line on stderr")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	// A page in a browser that rebinds a name to 127.0.0.1 sends its own
	// Host: refused before any MCP handling.
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "attacker.example:80"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request with Host attacker.example: HTTP %d; want 403", resp.StatusCode)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, out := callTool(t, cs, "read_file", map[string]any{"path": "calc.go"}); !strings.Contains(out.Observation, "func Add") {
		t.Fatalf("read_file over HTTP: %+v", out)
	}
	if res, out := callTool(t, cs, "run_tool", map[string]any{"program": "/bin/sh", "args": []string{}}); !res.IsError || out.Refusal != "program" {
		t.Fatalf("run_tool of a path over HTTP: %+v", out)
	}
	cs.Close()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d (%v) after SIGINT; want 130", code, err)
	}
}

// TestMCPTypeScriptClient: the official TypeScript SDK, an independent
// client, drives `artagent mcp` through testdata/mcp/ts_client.mjs.
// ART_MCP_TS_SDK names where `npm install @modelcontextprotocol/sdk` ran
// (.ci/run installs it); without it or node the test is skipped, except
// under CI, where it must run.
func TestMCPTypeScriptClient(t *testing.T) {
	sdk := os.Getenv("ART_MCP_TS_SDK")
	node, nodeErr := exec.LookPath("node")
	switch {
	case nodeErr != nil || sdk == "":
		why := "ART_MCP_TS_SDK is not set (npm install @modelcontextprotocol/sdk into a directory and name it)"
		if nodeErr != nil {
			why = "node is not installed"
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript MCP client must run in CI: %s", why)
		}
		t.Skip(why)
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("ART_MCP_TS_SDK=%s has no @modelcontextprotocol/sdk: %v", sdk, err)
	}
	bin, err := exec.LookPath("artagent")
	if err != nil {
		t.Fatal(err)
	}
	ws := goProject(t)
	tr := filepath.Join(t.TempDir(), "ts.jsonl")
	script, err := filepath.Abs("testdata/mcp/ts_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, bin, ws, tr)
	cmd.Env = goEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ts_client: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ts_client: all checks passed") {
		t.Fatalf("ts_client did not finish its checks:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.go")); !strings.Contains(string(b), "return a + b") {
		t.Errorf("calc.go was not fixed:\n%s", b)
	}
	recs, err := transcript.Read(tr)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "finished" {
		t.Errorf("last record %+v", last)
	}
}

func waitPids(t *testing.T, mark string, n int) {
	t.Helper()
	systest.WaitPids(t, mark, n, 20*time.Second)
}

func noSurvivor(t *testing.T, mark string) { t.Helper(); systest.NoSurvivor(t, mark, 10*time.Second) }

// TestMCPInspectorCLI: the MCP Inspector's headless CLI
// (@modelcontextprotocol/inspector 2.12.0, installed beside the TypeScript
// SDK in ART_MCP_TS_SDK with the node 22 it needs, the npm package "node")
// lists the six tools of `artagent mcp` with no schema portability
// finding, sees an escape refused as an isError result, and, each call
// being a new stdio session, cannot finish past the debt an edit opened in
// an earlier call.
func TestMCPInspectorCLI(t *testing.T) {
	sdk := os.Getenv("ART_MCP_TS_SDK")
	inspector := filepath.Join(sdk, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(inspector); sdk == "" || err != nil {
		why := "no mcp-inspector in ART_MCP_TS_SDK (npm install @modelcontextprotocol/inspector there)"
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP Inspector check must run in CI: %s", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	bin, err := exec.LookPath("artagent")
	if err != nil {
		t.Fatal(err)
	}
	ws := goProject(t)
	// The Inspector needs node >= 22.19: the one installed beside it.
	env := append(goEnv(t), "PATH="+filepath.Join(sdk, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	inspect := func(method ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := append(append([]string{"--cli"}, method...), "--", bin, "mcp", "--workspace", ws, "--verify", "go test ./...")
		cmd := exec.CommandContext(ctx, inspector, args...)
		cmd.Env = env
		stderr.Reset()
		cmd.Stderr = &stderr
		return cmd.Output()
	}
	out, err := inspect("--method", "tools/list", "--strict")
	if err != nil {
		t.Fatalf("mcp-inspector tools/list --strict: %v\n%s\n%s", err, out, stderr.String())
	}
	if strings.Contains(stderr.String(), "Schema portability") || strings.Contains(stderr.String(), "Warning:") {
		t.Errorf("the Inspector finds the schemas not portable:\n%s", stderr.String())
	}
	var list struct {
		Tools []struct {
			Name         string
			InputSchema  map[string]any
			OutputSchema map[string]any
		}
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema["type"] != "object" || tool.OutputSchema["type"] != "object" {
			t.Errorf("%s: schemas %v %v", tool.Name, tool.InputSchema, tool.OutputSchema)
		}
	}
	if got, want := strings.Join(names, " "), "finish read_file replace_text run_tool status verify"; got != want {
		t.Errorf("tools %q; want %q", got, want)
	}
	out, err = inspect("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=../../etc/passwd")
	if err == nil || !strings.Contains(string(out), `"isError": true`) || !strings.Contains(string(out), `"refusal": "path"`) {
		t.Errorf("mcp-inspector tools/call read_file ../../etc/passwd: %v; want an isError result refused for its path\n%s", err, out)
	}
	// An edit in one session, finish in the next: refused.
	out, err = inspect("--method", "tools/call", "--tool-name", "replace_text", "--tool-arg", "path=calc.go", "old=return a - b", "new=return a + b")
	if err != nil || !strings.Contains(string(out), `"debt": true`) {
		t.Fatalf("mcp-inspector replace_text: %v\n%s\n%s", err, out, stderr.String())
	}
	out, err = inspect("--method", "tools/call", "--tool-name", "finish", "--tool-arg", "summary=done")
	if err == nil || !strings.Contains(string(out), `"isError": true`) || !strings.Contains(string(out), `"refusal": "debt"`) {
		t.Errorf("mcp-inspector finish in the session after an edit: %v; want an isError result refused for the debt\n%s", err, out)
	}
}

// TestMCPPolicyFile: with --policy the document is run_tool's whole
// policy: its allowlist admits cat and nothing else, whatever the client
// asks.
func TestMCPPolicyFile(t *testing.T) {
	ws := goProject(t)
	pol := filepath.Join(t.TempDir(), "policy.json")
	doc := fmt.Sprintf(`{"apiVersion": "art/v1alpha1", "kind": "Policy", "allow": ["cat"], "workspace": %q}`, ws)
	if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("artagent", "mcp", "--workspace", ws, "--policy", pol, "--verify", "true")
	cmd.Env = goEnv(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, out := callTool(t, cs, "run_tool", map[string]any{"program": "cat", "args": []string{"go.mod"}}); res.IsError || !strings.Contains(out.Observation, "module") {
		t.Errorf("cat under the policy: %+v", out)
	}
	if res, out := callTool(t, cs, "run_tool", map[string]any{"program": "sh", "args": []string{"-c", "id"}}); !res.IsError || out.Refusal != "program" {
		t.Errorf("sh, not in the policy: %+v", out)
	}
	var st mcpserver.StatusOutput
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &st)
	if strings.Join(st.Allow, ",") != "cat" {
		t.Errorf("status allow %v; want the policy's [cat]", st.Allow)
	}
}

// TestMCPStdioStepLimit: --max-steps bounds a client as it bounds a
// model: the call past it is refused, the run ends step_limit, exit 1.
func TestMCPStdioStepLimit(t *testing.T) {
	ws := goProject(t)
	tr := filepath.Join(t.TempDir(), "mcp.jsonl")
	cmd := exec.Command("artagent", mcpArgs(ws, tr, "--max-steps", "1")...)
	cmd.Env = goEnv(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := callTool(t, cs, "read_file", map[string]any{"path": "calc.go"}); res.IsError {
		t.Fatalf("step 1 refused")
	}
	if res, out := callTool(t, cs, "replace_text", map[string]any{"path": "calc.go", "old": "return a - b", "new": "return a + b"}); !res.IsError || out.Status != "step_limit" {
		t.Fatalf("step 2 of 1: %+v", out)
	}
	cs.Close()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d; want 1", code)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.go")); !strings.Contains(string(b), "return a - b") {
		t.Errorf("the refused edit landed")
	}
	recs, err := transcript.Read(tr)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "step_limit" {
		t.Errorf("last record %+v; want end step_limit", last)
	}
}
