package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The fake secrets the OpenTelemetry tests put in task arguments and in
// what a task prints; none may reach a backend.
var otelSecrets = []string{
	"AKIAZ7VQ3MRT5XKP2LWN",
	"ghp_R2d2C3poBb8Luke0Leia1Han2Solo3Chewie4",
	"R2d2C3poBb8Luke0Leia1Han2Solo3Chewie4",
}

// serverBinary finds a test server built by a scripts/ script: $env, else
// the script's cache path. Under CI a missing one fails; elsewhere the
// test is skipped with the way to get it.
func serverBinary(t *testing.T, env, cached, script string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if _, err := os.Stat(cached); err == nil {
		return cached
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set and %s does not exist: .ci/run builds it with %s", env, cached, script)
	}
	t.Skipf("no server binary: set %s or run %s (it builds one, once, into %s)", env, script, cached)
	return ""
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// outFile is a file a server writes its output to, for the test to read.
type outFile string

func newOutFile(t *testing.T, name string) (outFile, *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return outFile(p), f
}

func (o outFile) String() string {
	b, _ := os.ReadFile(string(o))
	return string(b)
}

// jaeger is a Jaeger all-in-one the test started: OTLP/HTTP in, traces
// kept in memory and read back through its query API; log records go
// through its OpenTelemetry Collector pipeline to the debug exporter, whose
// detailed print (in out) is where the test reads them.
type jaeger struct {
	otlp, query string // host:port
	out         outFile
}

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := serverBinary(t, "ART_JAEGER", "/var/cache/art/jaeger-v1.76.0/bin/jaeger", "scripts/jaeger.sh")
	j := &jaeger{
		otlp:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		query: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	var w *os.File
	j.out, w = newOutFile(t, "jaeger.out")
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
    logs:
      receivers: [otlp]
      exporters: [debug]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
  debug:
    verbosity: detailed
    use_internal_logger: false
`, j.query, freePort(t), j.otlp)
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = w, w
	// Jaeger's query service would trace itself to localhost:4317.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if c, err := net.Dial("tcp", j.otlp); err == nil {
				c.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not start in 60s:\n%s", j.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return j
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(k string) string {
	for _, t := range s.Tags {
		if t.Key == k {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// traces reads every trace of service from the query API, and the raw
// answer (to look for secrets in).
func (j *jaeger) traces(t *testing.T, service string) ([]jaegerTrace, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + j.query + "/api/traces?service=" + service + "&limit=1000&lookback=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("jaeger /api/traces: %d %v: %s", resp.StatusCode, err, raw)
	}
	var r struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("jaeger /api/traces: %v", err)
	}
	return r.Data, raw
}

// runTool runs one built tool in dir with env added, and returns its
// combined output; a failure fails the test.
func runTool(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// agentQueue makes a queue of n agent tasks (mock provider) whose
// arguments and tool output hold otelSecrets, and a policy that lets them
// reach the loopback collector and inherit ART_EVENTS.
func agentQueue(t *testing.T, ctx context.Context, n int) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(ws, "a.txt"): "hello\n",
		filepath.Join(dir, "script.jsonl"): `{"action":"run_tool","program":"sh","args":["-c","echo key=AKIAZ7VQ3MRT5XKP2LWN token=$GH_TOKEN"],"reason":"check the credentials"}
{"action":"read_file","path":"a.txt","reason":"look"}
{"action":"verify"}
{"action":"finish","summary":"done"}
`,
		filepath.Join(dir, "policy.json"): `{"apiVersion": "art/v1alpha1", "kind": "Policy", "allow": ["artagent"], "workspace": "` + ws + `",
 "network": {"mode": "host"},
 "env_allow": ["PATH", "HOME", "TMPDIR", "GORACE", "GH_TOKEN", "ART_EVENTS"]}`,
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = []string{
		"PATH=" + binDir + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"ART_HOME=" + filepath.Join(dir, "home"),
		"GH_TOKEN=ghp_R2d2C3poBb8Luke0Leia1Han2Solo3Chewie4",
		"GORACE=atexit_sleep_ms=0",
		"ART_EVENTS=", "TRACEPARENT=", "TRACESTATE=",
	}
	for i := range n {
		runTool(t, ctx, ws, env, "artq", "enqueue", "--id", fmt.Sprintf("t%d", i), "--",
			"artagent", "run", "--workspace", ".", "--task", "deploy with key AKIAZ7VQ3MRT5XKP2LWN",
			"--provider", "mock", "--mock-script", filepath.Join(dir, "script.jsonl"),
			"--allow", "sh", "--allow", "cat", "--verify", "cat a.txt", "--env", "GH_TOKEN")
	}
	return dir, env
}

// TestOTelJaeger drains a queue of agent tasks with OTLP export on (the
// worker and, through the inherited ART_EVENTS and the TRACEPARENT the
// worker sets, each agent run) into a real Jaeger, and reads back one trace
// a task: artq.attempt → artq.run → artagent.run → artagent.step →
// artagent.provider and artagent.action/verify; the log records went
// through Jaeger's collector pipeline. No secret reached it.
func TestOTelJaeger(t *testing.T) {
	j := startJaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 3
	dir, env := agentQueue(t, ctx, n)
	// The worker and every agent run inside a task export to Jaeger and
	// append to one JSONL file, to compare with.
	env = append(env, "ART_EVENTS=otlphttp://"+j.otlp+" jsonl:"+filepath.Join(dir, "ev.jsonl"))
	runTool(t, ctx, filepath.Join(dir, "ws"), env, "artq", "work", "--drain", "-j", "2", "-q", "--policy", filepath.Join(dir, "policy.json"))

	var traces []jaegerTrace
	var raw []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		traces, raw = j.traces(t, "artq")
		if complete(traces) == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := complete(traces); got != n {
		t.Fatalf("jaeger holds %d complete task traces of %d; want %d:\n%s", got, len(traces), n, raw)
	}
	tasks := map[string]bool{}
	for _, tr := range traces {
		byID := map[string]jaegerSpan{}
		for _, s := range tr.Spans {
			byID[s.SpanID] = s
		}
		var root jaegerSpan
		steps := 0
		for _, s := range tr.Spans {
			switch s.OperationName {
			case "artq.attempt":
				root = s
				if s.parent() != "" {
					t.Errorf("trace %s: artq.attempt has a parent %s; want the root", tr.TraceID, s.parent())
				}
			case "artq.run":
				want(t, tr, byID, s, "artq.attempt")
			case "artagent.run":
				want(t, tr, byID, s, "artq.run")
				if svc := tr.Processes[s.ProcessID].ServiceName; svc != "artagent" {
					t.Errorf("trace %s: artagent.run from service %q; want artagent", tr.TraceID, svc)
				}
				if st := s.tag("artagent.status"); st != "finished" {
					t.Errorf("trace %s: artagent.run status %q; want finished", tr.TraceID, st)
				}
			case "artagent.step":
				steps++
				want(t, tr, byID, s, "artagent.run")
			case "artagent.provider", "artagent.action", "artagent.verify":
				want(t, tr, byID, s, "artagent.step")
			}
		}
		if steps != 4 {
			t.Errorf("trace %s: %d artagent.step spans; want 4 (the mock script's)", tr.TraceID, steps)
		}
		tasks[root.tag("artq.task.id")] = true
	}
	if len(tasks) != n {
		t.Errorf("traces name tasks %v; want %d distinct", tasks, n)
	}
	agentTraces, agentRaw := j.traces(t, "artagent")
	if len(agentTraces) != n {
		t.Errorf("service artagent has %d traces; want %d (each inside its task's)", len(agentTraces), n)
	}

	// The log records: one per event, through Jaeger's collector pipeline
	// (its debug exporter prints each record with its attributes).
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(j.out.String(), "agent.result") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	logs := j.out.String()
	// Every envelope the JSONL sink beside it holds arrived as one record.
	ev, err := os.ReadFile(filepath.Join(dir, "ev.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ev)), "\n")
	for _, l := range lines {
		var e struct{ ID string }
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.ID == "" {
			t.Fatalf("ev.jsonl: %q: %v", l, err)
		}
		if c := strings.Count(logs, "art.id: Str("+e.ID+")"); c != 1 {
			t.Errorf("envelope %s reached jaeger %d times; want once", e.ID, c)
		}
	}
	// Each run's task.started names its span: the record carries the trace.
	for _, tr := range traces {
		for _, sp := range tr.Spans {
			if sp.OperationName == "artq.run" && !strings.Contains(logs, `"traceparent":"00-`+tr.TraceID+`-`+sp.SpanID+`-01"`) {
				t.Errorf("no event records the TRACEPARENT of run span %s/%s", tr.TraceID, sp.SpanID)
			}
		}
		if !strings.Contains(logs, "Trace ID: "+tr.TraceID) {
			t.Errorf("no log record is linked to trace %s", tr.TraceID)
		}
	}
	if got := strings.Count(logs, "\nLogRecord #"); got != len(lines) {
		t.Errorf("jaeger printed %d log records; the JSONL sink holds %d envelopes", got, len(lines))
	}
	for _, w := range []string{"art.subject: Str(queue/", "art.type: Str(queue.succeeded)", "art.type: Str(agent.step)", "art.sequence: Int(", "art.id: Str(sha256:", "SeverityText: INFO", "service.name: Str(artagent)"} {
		if !strings.Contains(logs, w) {
			t.Errorf("jaeger's log pipeline printed no %q", w)
		}
	}
	for _, s := range otelSecrets {
		for what, b := range map[string]string{"artq traces": string(raw), "artagent traces": string(agentRaw), "log records": logs} {
			if strings.Contains(b, s) {
				t.Errorf("jaeger's %s hold the secret %q", what, s)
			}
		}
	}
	if t.Failed() {
		t.Logf("jaeger output:\n%s", logs)
	}
}

// complete counts the traces that hold a task attempt and its agent run.
func complete(traces []jaegerTrace) int {
	n := 0
	for _, tr := range traces {
		var att, agent bool
		for _, s := range tr.Spans {
			att = att || s.OperationName == "artq.attempt"
			agent = agent || s.OperationName == "artagent.run"
		}
		if att && agent {
			n++
		}
	}
	return n
}

func want(t *testing.T, tr jaegerTrace, byID map[string]jaegerSpan, s jaegerSpan, parent string) {
	t.Helper()
	if p, ok := byID[s.parent()]; !ok || p.OperationName != parent {
		t.Errorf("trace %s: %s's parent is %q; want %s", tr.TraceID, s.OperationName, p.OperationName, parent)
	}
}

// TestOTelExporterKilled kills the exporter process (artobs-otlp) in the
// middle of a drain with OTLP export on: the drain completes, every task
// succeeds, the worker warns once that the exporter stopped and, at the
// end, how many log records and spans were dropped; nothing else fails.
func TestOTelExporterKilled(t *testing.T) {
	j := startJaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	env := []string{
		"PATH=" + binDir + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"ART_HOME=" + filepath.Join(dir, "home"),
		"GORACE=atexit_sleep_ms=0",
		"ART_EVENTS=", "TRACEPARENT=", "TRACESTATE=",
	}
	const n = 60
	var batch strings.Builder
	for range n {
		batch.WriteString(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"sleep","args":["0.1"]}` + "\n")
	}
	enq := exec.CommandContext(ctx, filepath.Join(binDir, "artq"), "enqueue", "--batch")
	enq.Env, enq.Stdin = append(os.Environ(), env...), strings.NewReader(batch.String())
	if out, err := enq.CombinedOutput(); err != nil {
		t.Fatalf("artq enqueue --batch: %v\n%s", err, out)
	}
	var stderr strings.Builder
	work := exec.CommandContext(ctx, filepath.Join(binDir, "artq"), "work", "--drain", "-q", "-j", "2", "--allow", "sleep",
		"--workspace", dir, "--events", "otlphttp://"+j.otlp)
	work.Env, work.Stderr = append(os.Environ(), env...), &stderr
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the exporter once Jaeger holds a trace and the exporter has
	// had time to report it (it reports every 200 ms): some records were
	// exported, more are on their way.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if traces, _ := j.traces(t, "artq"); len(traces) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	exporter := childNamed(work.Process.Pid, "artobs-otlp")
	if exporter == 0 {
		t.Fatalf("no artobs-otlp child of the worker (pid %d)", work.Process.Pid)
	}
	if err := syscall.Kill(exporter, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := work.Wait(); err != nil {
		t.Fatalf("artq work --drain: %v (a dead exporter must not fail the drain)\n%s", err, stderr.String())
	}
	if got := succeeded(t, ctx, env); got != n {
		t.Errorf("%d tasks succeeded; want %d", got, n)
	}
	errs := stderr.String()
	if c := strings.Count(errs, "artq: warning: events otlphttp://"+j.otlp+": the exporter artobs-otlp stopped (signal: killed)"); c != 1 {
		t.Errorf("%d warnings that the exporter stopped; want 1:\n%s", c, errs)
	}
	m := regexp.MustCompile(`artq: warning: events otlphttp://\S+: (\d+) log records and (\d+) spans dropped \((\d+) and (\d+) exported\)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no final drop count in stderr:\n%s", errs)
	}
	// Every task's attempt and run spans were handed over: what was not
	// exported was dropped, and the kill dropped some.
	ds, _ := strconv.Atoi(m[2])
	xs, _ := strconv.Atoi(m[4])
	if ds+xs != 2*n || ds == 0 || xs == 0 {
		t.Errorf("spans: %d dropped + %d exported; want %d in all, some of each:\n%s", ds, xs, 2*n, errs)
	}
	t.Logf("worker stderr:\n%s", errs)
	if lines := strings.Count(strings.TrimSpace(errs), "\n") + 1; lines != 2 {
		t.Errorf("stderr has %d lines; want the 2 warnings only:\n%s", lines, errs)
	}
}

// succeeded reads artq status --summary's succeeded count.
func succeeded(t *testing.T, ctx context.Context, env []string) int {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "artq"), "status", "--summary")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	var s struct{ Succeeded int }
	json.Unmarshal(out, &s)
	return s.Succeeded
}

// childNamed returns the pid of a child of parent whose command is name,
// or 0.
func childNamed(parent int, name string) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(b)) {
			comm, _ := os.ReadFile("/proc/" + p + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				pid, _ := strconv.Atoi(p)
				return pid
			}
		}
	}
	return 0
}
