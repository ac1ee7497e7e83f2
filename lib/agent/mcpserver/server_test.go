package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/mcpserver"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	if ws := os.Getenv(stdioServerEnv); ws != "" {
		os.Exit(serveStdio(ws))
	}
	goleak.VerifyTestMain(m)
}

// stdioServerEnv makes the test binary an MCP server on stdio for the
// workspace it names (the stdio benchmark's subprocess).
const stdioServerEnv = "MCPSERVER_TEST_STDIO_WORKSPACE"

func serveStdio(ws string) int {
	core, err := agent.NewCore(agent.Config{Workspace: ws, Allow: []string{"true"}, Verify: []string{"true"}, MaxSteps: 1 << 30}, agent.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := mcpserver.New(core, mcpserver.Options{}).ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// syncBuffer is a bytes.Buffer safe for the core's writers and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	t      *testing.T
	ws     string
	core   *agent.Core
	cs     *mcp.ClientSession
	events *syncBuffer
	tr     string
}

// config: a.txt = "hello old world\n"; verify passes once a.txt holds "new".
func config(t *testing.T) agent.Config {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello old world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return agent.Config{
		Workspace: ws,
		Allow:     []string{"cat", "sleep", "sh", "true"},
		Verify:    []string{"grep", "-q", "new", "a.txt"},
		Provider:  "mcp",
	}
}

// start serves a core for cfg to the SDK's own client over in-memory
// transports, with a transcript outside the workspace.
func start(t *testing.T, cfg agent.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, ws: cfg.Workspace, events: &syncBuffer{}, tr: filepath.Join(t.TempDir(), "t.jsonl")}
	w, err := transcript.Create(f.tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	f.core, err = agent.NewCore(cfg, agent.Options{Events: f.events, Transcript: w})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(f.core, mcpserver.Options{Transcript: f.tr})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, st) }()
	f.cs, err = mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

// call calls a tool; a protocol error fails the test.
func (f *fixture) call(name string, args any) (*mcp.CallToolResult, mcpserver.StepOutput) {
	f.t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		f.t.Fatalf("%s %v: protocol error %v; refusals must be tool results", name, args, err)
	}
	var out mcpserver.StepOutput
	decode(f.t, res, &out)
	return res, out
}

func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	if res.StructuredContent == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func (f *fixture) records() []transcript.Record {
	f.t.Helper()
	recs, err := transcript.Read(f.tr)
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

func TestToolsListed(t *testing.T) {
	f := start(t, config(t))
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	required := map[string][]string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		in, _ := tool.InputSchema.(map[string]any)
		if in["type"] != "object" {
			t.Errorf("%s: input schema %v is not an object schema", tool.Name, tool.InputSchema)
		}
		if out, _ := tool.OutputSchema.(map[string]any); out["type"] != "object" {
			t.Errorf("%s: output schema %v is not an object schema", tool.Name, tool.OutputSchema)
		}
		req, _ := in["required"].([]any)
		for _, r := range req {
			required[tool.Name] = append(required[tool.Name], r.(string))
		}
		slices.Sort(required[tool.Name])
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(mcpserver.Tools))
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v; want %v", names, want)
	}
	for tool, want := range map[string][]string{
		"run_tool": {"args", "program"}, "read_file": {"path"}, "replace_text": {"new", "old", "path"},
		"verify": nil, "status": nil, "finish": {"summary"},
	} {
		if !slices.Equal(required[tool], want) {
			t.Errorf("%s requires %v; want %v", tool, required[tool], want)
		}
	}
}

// TestRefusals: every refusal is an isError result naming the reason, the
// workspace and the file outside it are untouched, and each refused call
// is a recorded step like the loop's.
func TestRefusals(t *testing.T) {
	cfg := config(t)
	cfg.ToolTimeout = 30 * time.Second
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"dup.txt": "x x\n"} {
		if err := os.WriteFile(filepath.Join(cfg.Workspace, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(cfg.Workspace, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(cfg.Workspace, "outdir")); err != nil {
		t.Fatal(err)
	}
	f := start(t, cfg)
	before := systest.Tree(t, cfg.Workspace)
	for _, c := range []struct {
		tool    string
		args    map[string]any
		refusal string
	}{
		{"read_file", map[string]any{"path": outside}, "path"},
		{"read_file", map[string]any{"path": "../secret.txt"}, "path"},
		{"read_file", map[string]any{"path": "out"}, "path"},
		{"read_file", map[string]any{"path": "missing.txt"}, "file"},
		{"read_file", map[string]any{"path": "."}, "file"},
		{"replace_text", map[string]any{"path": "out", "old": "SECRET", "new": "pwned"}, "path"},
		{"replace_text", map[string]any{"path": "a.txt", "old": "", "new": "x"}, "match"},
		{"replace_text", map[string]any{"path": "a.txt", "old": "absent", "new": "x"}, "match"},
		{"replace_text", map[string]any{"path": "dup.txt", "old": "x", "new": "y"}, "match"},
		{"replace_text", map[string]any{"path": "new.txt", "old": "a", "new": "b"}, "file"},
		{"run_tool", map[string]any{"program": "ls", "args": []string{}}, "program"},
		{"run_tool", map[string]any{"program": "/bin/cat", "args": []string{outside}}, "program"},
		{"run_tool", map[string]any{"program": "../cat", "args": []string{}}, "program"},
		{"run_tool", map[string]any{"program": "cat", "args": []string{"secret.txt"}, "cwd": ".."}, "path"},
		{"run_tool", map[string]any{"program": "cat", "args": []string{"secret.txt"}, "cwd": "outdir"}, "path"},
		{"run_tool", map[string]any{"program": "cat", "args": []string{"a.txt"}, "timeout": 3600}, "invalid"},
		{"run_tool", map[string]any{"program": "cat", "args": []string{"a.txt"}, "timeout": -1}, "invalid"},
		{"run_tool", map[string]any{"program": "", "args": []string{}}, "format"},
	} {
		res, out := f.call(c.tool, c.args)
		if !res.IsError || out.Refusal != c.refusal || out.Outcome != "rejected" || text(res) == "" {
			t.Errorf("%s %v: isError=%t refusal=%q outcome=%q text=%q; want an isError result, refusal %q",
				c.tool, c.args, res.IsError, out.Refusal, out.Outcome, text(res), c.refusal)
		}
		if strings.Contains(text(res), "SECRET") {
			t.Errorf("%s %v: the outside file's content reached the client: %s", c.tool, c.args, text(res))
		}
	}
	systest.SameTree(t, "the workspace after refused calls", cfg.Workspace, before)
	if b, _ := os.ReadFile(outside); string(b) != "SECRET\n" {
		t.Errorf("the file outside the workspace changed: %q", b)
	}

	// Arguments the schema refuses are tool errors too, never protocol
	// errors, and never reach the core.
	steps := f.core.Snapshot().Steps
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{}},
		{"read_file", map[string]any{"path": 3}},
		{"run_tool", map[string]any{"program": "cat"}},
		{"run_tool", map[string]any{"program": "cat", "args": []string{}, "shell": true}},
		{"replace_text", map[string]any{"path": "a.txt", "old": "old"}},
	} {
		if res, _ := f.call(c.tool, c.args); !res.IsError {
			t.Errorf("%s %v: accepted; want an isError result from the schema", c.tool, c.args)
		}
	}
	if got := f.core.Snapshot().Steps; got != steps {
		t.Errorf("schema-refused calls became steps: %d → %d", steps, got)
	}

	// An unknown tool is the one protocol error.
	if _, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{}}); err == nil {
		t.Errorf("an unknown tool was not a protocol error")
	}
}

// TestDebtOpenClearedReopened walks the verification gate: finish refused
// with debt open, verify failing keeps it, passing clears it, a new edit
// reopens it, and only then is finish accepted; after it every action is
// refused. The transcript and the events record each step as the loop's.
func TestDebtOpenClearedReopened(t *testing.T) {
	f := start(t, config(t))

	res, out := f.call("verify", map[string]any{})
	if res.IsError || out.Passed == nil || *out.Passed || out.Debt {
		t.Fatalf("verify before any edit: %+v; want a failing verify, no debt, not an error", out)
	}
	res, out = f.call("replace_text", map[string]any{"path": "a.txt", "old": "hello", "new": "hullo"})
	if res.IsError || !out.Debt || out.Edit == nil || out.Edit.Line != 1 {
		t.Fatalf("first edit: %+v; want debt open and the edit", out)
	}
	res, out = f.call("finish", map[string]any{"summary": "early"})
	if !res.IsError || out.Refusal != "debt" || !strings.Contains(text(res), "verification debt is open") {
		t.Fatalf("finish with debt open: %+v %q; want refusal debt", out, text(res))
	}
	res, out = f.call("verify", map[string]any{})
	if res.IsError || *out.Passed || !out.Debt || !strings.Contains(out.Observation, "verification failed: debt remains open") {
		t.Fatalf("failing verify: %+v; want debt still open", out)
	}
	_, out = f.call("replace_text", map[string]any{"path": "a.txt", "old": "old", "new": "new"})
	if !out.Debt || out.Edits != 2 {
		t.Fatalf("second edit: %+v", out)
	}
	_, out = f.call("verify", map[string]any{})
	if !*out.Passed || out.Debt || !out.Verified {
		t.Fatalf("passing verify: %+v; want debt cleared", out)
	}
	var st mcpserver.StatusOutput
	sres, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	decode(t, sres, &st)
	if st.Debt || st.Edits != 2 || st.Steps != 6 || st.LastVerify == nil || !st.LastVerify.Passed || st.LastVerify.Step != 6 {
		t.Fatalf("status: %+v", st)
	}
	_, out = f.call("replace_text", map[string]any{"path": "a.txt", "old": "new", "new": "newer"})
	if !out.Debt {
		t.Fatalf("an edit after a passing verify must reopen the debt: %+v", out)
	}
	res, out = f.call("finish", map[string]any{"summary": "too soon"})
	if !res.IsError || out.Refusal != "debt" {
		t.Fatalf("finish with reopened debt: %+v", out)
	}
	f.call("verify", map[string]any{})
	res, out = f.call("finish", map[string]any{"summary": "replaced old with newer"})
	if res.IsError || out.Outcome != "finished" || !out.Verified || out.Status != "finished" {
		t.Fatalf("finish after a passing verify: %+v %q", out, text(res))
	}
	res, out = f.call("read_file", map[string]any{"path": "a.txt"})
	if !res.IsError || out.Outcome != "ended" && out.Status != "finished" {
		t.Fatalf("an action after finish: %+v; want refused", out)
	}

	// The transcript: start, then intent/step pairs, the accepted finish
	// as a step, and one end record.
	recs := f.records()
	var outcomes []string
	for _, r := range recs {
		if r.Type == transcript.TypeStep {
			outcomes = append(outcomes, r.Outcome)
		}
	}
	want := []string{"verify", "observation", "rejected", "verify", "observation", "verify", "observation", "rejected", "verify", "finished"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("transcript step outcomes %v; want %v", outcomes, want)
	}
	if recs[0].Type != transcript.TypeStart || recs[0].Run.Provider != "mcp" {
		t.Errorf("first record %+v; want the start, provider mcp", recs[0])
	}
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "finished" {
		t.Errorf("last record %+v; want end, finished", last)
	}
	// The events: as the loop emits them, ending with one result; events
	// and records both valid against the loop's schemas.
	var types []string
	evSchema := schematest.Compile(t, "agent-event.schema.json")
	for _, line := range strings.Split(strings.TrimSpace(f.events.String()), "\n") {
		var ev agent.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.Type))
		schematest.Validate(t, evSchema, "event "+line, []byte(line))
	}
	trSchema := schematest.Compile(t, "transcript-record.schema.json")
	raw, err := os.ReadFile(f.tr)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		schematest.Validate(t, trSchema, fmt.Sprintf("transcript line %d", i+1), []byte(line))
	}
	if n := len(types); n != 2*len(want) || types[n-1] != "result" || types[0] != "step" {
		t.Errorf("events %v", types)
	}
}

func TestResources(t *testing.T) {
	f := start(t, config(t))
	read := func(uri string) string {
		t.Helper()
		res, err := f.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		return res.Contents[0].Text
	}
	if got := read(mcpserver.ResourceLastVerify); got != "no verify has run yet" {
		t.Errorf("last verify before any: %q", got)
	}
	f.call("replace_text", map[string]any{"path": "a.txt", "old": "old", "new": "new"})
	f.call("verify", map[string]any{})
	if got := read(mcpserver.ResourceLastVerify); !strings.Contains(got, "$ grep -q new a.txt (verify)") || !strings.Contains(got, "debt cleared") {
		t.Errorf("last verify: %q", got)
	}
	tr := read(mcpserver.ResourceTranscript)
	if n := strings.Count(tr, `"type":"step"`); n != 2 {
		t.Errorf("transcript resource has %d steps; want 2:\n%s", n, tr)
	}
}

// TestStepLimit: --max-steps counts action calls; past it every action is
// refused and the run ends step_limit, while status still answers.
func TestStepLimit(t *testing.T) {
	cfg := config(t)
	cfg.MaxSteps = 2
	f := start(t, cfg)
	f.call("read_file", map[string]any{"path": "a.txt"})
	f.call("status", map[string]any{}) // not a step
	f.call("read_file", map[string]any{"path": "a.txt"})
	for range 2 {
		res, out := f.call("read_file", map[string]any{"path": "a.txt"})
		if !res.IsError || out.Status != "step_limit" || !strings.Contains(text(res), "step limit of 2") && !strings.Contains(text(res), "step_limit") {
			t.Fatalf("a call past the step limit: %+v %q", out, text(res))
		}
	}
	recs := f.records()
	if last := recs[len(recs)-1]; last.Type != transcript.TypeEnd || last.Status != "step_limit" {
		t.Errorf("last record %+v; want end step_limit", last)
	}
	if n := strings.Count(f.events.String(), `"type":"result"`); n != 1 {
		t.Errorf("%d result events; want 1", n)
	}
}

// TestDeadline: the run's wall-clock budget kills a running tool and then
// refuses every action with status timeout.
func TestDeadline(t *testing.T) {
	cfg := config(t)
	cfg.Deadline = 300 * time.Millisecond
	f := start(t, cfg)
	mark := fmt.Sprintf("%d.%09d", 900, time.Now().UnixNano()%1e9)
	res, out := f.call("run_tool", map[string]any{"program": "sleep", "args": []string{mark}})
	if res.IsError || !out.Cancelled {
		t.Fatalf("a tool running past the deadline: %+v; want it cut off", out)
	}
	noSurvivor(t, mark)
	res, out = f.call("read_file", map[string]any{"path": "a.txt"})
	if !res.IsError || out.Status != "timeout" {
		t.Fatalf("a call after the deadline: %+v %q; want refused, timeout", out, text(res))
	}
}

// TestCancelKillsProcessGroup: a client's notifications/cancelled (the
// SDK sends it when the call's context ends) kills the running tool's
// whole process group, a background child included; the step is recorded
// as cancelled and the session goes on.
func TestCancelKillsProcessGroup(t *testing.T) {
	f := start(t, config(t))
	mark := fmt.Sprintf("%d.%09d", 800, time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_tool", Arguments: map[string]any{
			"program": "sh", "args": []string{"-c", "sleep " + mark + " & sleep " + mark + "; wait"}}})
		errc <- err
	}()
	waitPids(t, mark, 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v; want context.Canceled", err)
	}
	noSurvivor(t, mark)
	// The step completes in the core (its record says cancelled) before
	// the next call gets its turn.
	res, out := f.call("read_file", map[string]any{"path": "a.txt"})
	if res.IsError || out.Step != 2 {
		t.Fatalf("the call after a cancel: %+v", out)
	}
	var step1 *transcript.Record
	for _, r := range f.records() {
		if r.Type == transcript.TypeStep && r.Step == 1 {
			step1 = &r
		}
	}
	if step1 == nil || !strings.Contains(*step1.Observation, "[cancelled: process group killed") {
		t.Fatalf("step 1's record: %+v; want the cancelled observation", step1)
	}
}

func waitPids(t *testing.T, mark string, n int) {
	t.Helper()
	systest.WaitPids(t, mark, n, 20*time.Second)
}

func noSurvivor(t *testing.T, mark string) { t.Helper(); systest.NoSurvivor(t, mark, 10*time.Second) }

// TestCallsTakeTurns: two concurrent calls never run at once: the second
// waits for the first and sees its effect.
func TestCallsTakeTurns(t *testing.T) {
	f := start(t, config(t))
	var wg sync.WaitGroup
	outs := make([]mcpserver.StepOutput, 2)
	for i := range 2 {
		wg.Go(func() {
			res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "replace_text",
				Arguments: map[string]any{"path": "a.txt", "old": []string{"old", "hello"}[i], "new": []string{"new", "hi"}[i]}})
			if err != nil {
				t.Error(err)
				return
			}
			decode(t, res, &outs[i])
		})
	}
	wg.Wait()
	steps := []int{outs[0].Step, outs[1].Step}
	slices.Sort(steps)
	if !slices.Equal(steps, []int{1, 2}) {
		t.Errorf("steps %v; want 1 and 2", steps)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(b) != "hi new world\n" {
		t.Errorf("a.txt = %q; want both edits", b)
	}
}

// TestProgressWhileRunning: a call with a progress token hears that its
// tool is still running. The tool waits for a file the test writes only
// after the first notification arrived: by order, not by timing.
func TestProgressWhileRunning(t *testing.T) {
	cfg := config(t)
	core, err := agent.NewCore(cfg, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(core, mcpserver.Options{ProgressInterval: 5 * time.Millisecond})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, st) }()
	heard := make(chan string, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case heard <- r.Params.Message:
			default:
			}
		}})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cs.Close()
		cancel()
		<-done
	}()
	params := &mcp.CallToolParams{Name: "run_tool", Arguments: map[string]any{
		"program": "sh", "args": []string{"-c", "while [ ! -e go-on ]; do sleep 0.01; done"}}}
	params.SetProgressToken("t1")
	res := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		res <- err
	}()
	select {
	case msg := <-heard:
		if !strings.HasPrefix(msg, "run_tool: running… ") {
			t.Errorf("progress message %q", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no progress notification while the tool ran")
	}
	if err := os.WriteFile(filepath.Join(cfg.Workspace, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
}

// goneTransport is a client that went away: every read and write fails
// with err, as a pipe closed by its other end does.
type goneTransport struct{ err error }

func (g goneTransport) Connect(context.Context) (mcp.Connection, error) { return goneConn(g), nil }

type goneConn goneTransport

func (g goneConn) Read(context.Context) (jsonrpc.Message, error) { return nil, g.err }
func (g goneConn) Write(context.Context, jsonrpc.Message) error  { return g.err }
func (goneConn) Close() error                                    { return nil }
func (goneConn) SessionID() string                               { return "" }

// A client that disconnects ends the session cleanly however the
// transport says so: EOF, a closed pipe (a late reply written after the
// client closed its end), or EPIPE on stdio; any other failure is an
// error.
func TestServeClientGone(t *testing.T) {
	f := start(t, config(t))
	srv := mcpserver.New(f.core, mcpserver.Options{})
	for _, tc := range []struct {
		err  error
		want bool // Serve returns nil
	}{
		{io.EOF, true}, {io.ErrClosedPipe, true}, {fmt.Errorf("write: %w", syscall.EPIPE), true},
		{errors.New("disk on fire"), false},
	} {
		err := srv.Serve(context.Background(), goneTransport{tc.err})
		if (err == nil) != tc.want {
			t.Errorf("transport failing with %v: Serve returned %v", tc.err, err)
		}
	}
}
