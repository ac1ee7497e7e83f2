package agy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	goleak.VerifyTestMain(m)
}

var fakeAgy, _ = filepath.Abs("../../../../testdata/agent/fake-agy")

var fakeEnv = []string{"FAKE_AGY_MODE", "FAKE_AGY_REPLY", "FAKE_AGY_ARGS", "FAKE_AGY_WAIT_FILE"}

func request() *provider.Request {
	r := provider.NewRequest()
	r.Task, r.Step, r.MaxSteps = "fix the failing test", 1, 30
	r.Allow, r.Verify, r.History = []string{"go"}, []string{"go", "test", "./..."}, []provider.Turn{}
	return r
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newAgy(t *testing.T, mode string, cfg Config) (*Provider, *syncBuf) {
	t.Helper()
	t.Setenv("FAKE_AGY_MODE", mode)
	logs := &syncBuf{}
	cfg.Path, cfg.Env, cfg.Log = fakeAgy, fakeEnv, logs
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, logs
}

func TestProbeAndArgs(t *testing.T) {
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_AGY_ARGS", args)
	p, _ := newAgy(t, "ok", Config{})
	if _, err := p.Decide(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	f, _ := p.Probe(context.Background())
	if f != (Features{OutputFormat: true, StreamJSON: true, Mode: true, Sandbox: true, JSONSchema: true, PrintTimeout: true}) {
		t.Fatalf("features %+v", f)
	}
	b, _ := os.ReadFile(args)
	got := string(b)
	for _, want := range []string{
		"-p\nYou are a coding agent", "Task:\nfix the failing test\n", "\n--output-format\njson\n", "\n--mode\nplan\n",
		"\n--sandbox\n", "\n--json-schema\n" + provider.DecisionSchema + "\n", "\n--print-timeout\n270s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("argv lacks %q:\n%s", want, got)
		}
	}

	// An older agy without the optional flags gets none of them.
	p, _ = newAgy(t, "old-help", Config{Stream: true})
	if _, err := p.Decide(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(args)
	for _, absent := range []string{"--mode", "--json-schema", "--print-timeout"} {
		if strings.Contains(string(b), absent) {
			t.Errorf("argv for an old agy has %s", absent)
		}
	}
	if !strings.Contains(string(b), "--output-format\nstream-json\n") {
		t.Errorf("argv for stream mode:\n%s", b)
	}

	// One without structured output is refused.
	p, _ = newAgy(t, "ancient", Config{})
	if _, err := p.Decide(context.Background(), request()); err == nil || !strings.Contains(err.Error(), "lists no --output-format") {
		t.Fatalf("ancient agy: %v", err)
	}
}

func TestReplies(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			mode, want string
		}{
			{"ok", `{"action":"verify"}`},
			{"fence", `{"action":"verify"}`},
			{"pretty", `{"action":"verify"}`},
		} {
			if stream && tt.mode == "pretty" {
				continue
			}
			deltas := &syncBuf{}
			p, logs := newAgy(t, tt.mode, Config{Stream: stream, StreamTo: deltas})
			reply, err := p.Decide(context.Background(), request())
			if err != nil {
				t.Fatalf("%s stream=%v: %v", tt.mode, stream, err)
			}
			if reply.Text != tt.want || reply.Usage == nil || reply.Usage.TotalTokens != 826 || reply.Usage.InputTokens != 812 {
				t.Errorf("%s stream=%v: reply %+v usage %+v", tt.mode, stream, reply, reply.Usage)
			}
			if !stream && reply.Latency != 2400*time.Millisecond {
				t.Errorf("%s: latency %v; want agy's duration_seconds", tt.mode, reply.Latency)
			}
			if stream && !strings.HasSuffix(deltas.String(), "\n") {
				t.Errorf("%s: deltas %q", tt.mode, deltas.String())
			}
			if !strings.Contains(logs.String(), "agy: ") || strings.Contains(logs.String(), `"status"`) {
				t.Errorf("%s stream=%v: logs %q", tt.mode, stream, logs.String())
			}
		}
	}
}

// The first text delta reaches StreamTo while agy is still running: the
// fake waits for the file the writer creates on the first delta.
func TestStreamDeltasAsTheyArrive(t *testing.T) {
	wait := filepath.Join(t.TempDir(), "delta-seen")
	t.Setenv("FAKE_AGY_WAIT_FILE", wait)
	t.Setenv("FAKE_AGY_REPLY", `{"action":"read_file","path":"calc.go"}`)
	deltas := &fileOnFirstWrite{path: wait}
	p, logs := newAgy(t, "ok", Config{Stream: true, StreamTo: deltas})
	reply, err := p.Decide(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"action":"read_file","path":"calc.go"}` {
		t.Fatalf("reply %q", reply.Text)
	}
	if strings.Contains(logs.String(), "gave up waiting") {
		t.Fatalf("the first delta was not forwarded while agy ran: %s", logs.String())
	}
	if got := deltas.buf.String(); got != `{"action":"read_file","path":"calc.go"}`+"\n" {
		t.Fatalf("deltas %q", got)
	}
}

type fileOnFirstWrite struct {
	mu   sync.Mutex
	path string
	buf  bytes.Buffer
}

func (f *fileOnFirstWrite) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buf.Len() == 0 {
		_ = os.WriteFile(f.path, nil, 0o600)
	}
	return f.buf.Write(p)
}

func TestTraps(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			mode string
			cfg  Config
			is   error
			msg  string
		}{
			{"timeout-trap", Config{}, provider.ErrTimeout, "agy reported a print timeout (status SUCCESS"},
			{"timeout-silent", Config{}, provider.ErrTimeout, "zero usage and an incomplete response"},
			{"error", Config{}, nil, "status ERROR: quota exceeded for model gemini-3-pro"},
			{"garbage", Config{}, provider.ErrProtocol, ""},
			{"huge", Config{MaxReplyBytes: 64 << 10}, provider.ErrTooLarge, "65536"},
		} {
			if !stream && tt.mode == "no-result" {
				continue
			}
			tt.cfg.Stream = stream
			p, _ := newAgy(t, tt.mode, tt.cfg)
			_, err := p.Decide(context.Background(), request())
			var pe *provider.Error
			if !errors.As(err, &pe) || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%s stream=%v: %v; want %v containing %q", tt.mode, stream, err, tt.is, tt.msg)
			}
		}
	}
	p, _ := newAgy(t, "no-result", Config{Stream: true})
	if _, err := p.Decide(context.Background(), request()); !errors.Is(err, provider.ErrProtocol) || !strings.Contains(err.Error(), "without a result event") {
		t.Errorf("stream without result: %v", err)
	}
	// Auto-denied tools are not the end of the run: the reply names them
	// for the loop to tell the model.
	for _, stream := range []bool{false, true} {
		p, _ := newAgy(t, "denied", Config{Stream: stream})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || len(reply.Denied) != 1 || reply.Denied[0] != "run_shell_command (auto-denied in plan mode)" {
			t.Errorf("denied stream=%v: %+v, %v", stream, reply, err)
		}
	}
}

// The print-timeout trap is read from standard error only: a response
// that mentions a print timeout, in a document that spans lines, is a
// response like any other.
func TestPrintTimeoutOnlyFromStderr(t *testing.T) {
	t.Setenv("FAKE_AGY_REPLY", `{"action":"finish","summary":"fixed the print timeout"}`)
	p, _ := newAgy(t, "pretty", Config{})
	reply, err := p.Decide(context.Background(), request())
	if err != nil || reply.Text != `{"action":"finish","summary":"fixed the print timeout"}` {
		t.Fatalf("reply %+v, %v; want the response", reply, err)
	}
}

// fakeStderrAgy is an agy whose standard error carries lines that look
// like its stream-json events and a JSON result: they are logs, never
// parsed as agy's output.
const fakeStderrAgy = `#!/bin/sh
if [ "$1" = --help ]; then echo "  --output-format FORMAT   json | stream-json"; exit 0; fi
format=json
while [ $# -gt 0 ]; do case "$1" in --output-format) format=$2; shift 2 ;; *) shift ;; esac; done
echo '{"event":"step_update","step_update":{"text_delta":"NOT A DELTA"}}' >&2
echo '{"event":"result","result":{"status":"ERROR","error":"from stderr"}}' >&2
echo '{"status":"ERROR","response":"","error":"from stderr"}' >&2
if [ "$format" = stream-json ]; then
	echo '{"event":"step_update","step_update":{"text_delta":"{\"action\":\"verify\"}","usage":{"input_tokens":5,"output_tokens":2}}}'
	echo 'print timeout is a phrase, not a trap, on standard output' 
	echo '{"event":"result","result":{"status":"SUCCESS","usage":{"input_tokens":5,"output_tokens":2}}}'
else
	echo '{"status":"SUCCESS","response":"{\"action\":\"verify\"}","usage":{"input_tokens":5,"output_tokens":2}}'
fi
`

func TestStderrIsOnlyLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agy")
	if err := os.WriteFile(path, []byte(fakeStderrAgy), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		logs, deltas := &syncBuf{}, &syncBuf{}
		p, err := New(Config{Path: path, Stream: stream, StreamTo: deltas, Log: logs})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := p.Decide(context.Background(), request())
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if reply.Text != `{"action":"verify"}` || reply.Usage == nil || reply.Usage.TotalTokens != 7 {
			t.Errorf("stream=%v: reply %+v", stream, reply)
		}
		if stream && deltas.String() != `{"action":"verify"}`+"\n" {
			t.Errorf("deltas %q; want the stdout delta alone", deltas.String())
		}
		for _, want := range []string{"agy: {\"event\":\"step_update\"", "agy: {\"event\":\"result\"", "agy: {\"status\":\"ERROR\""} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("stream=%v: logs %q lack %q", stream, logs.String(), want)
			}
		}
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	p, _ := newAgy(t, "slow", Config{Timeout: 500 * time.Millisecond})
	start := time.Now()
	if _, err := p.Decide(context.Background(), request()); !errors.Is(err, provider.ErrTimeout) || !strings.Contains(err.Error(), "process group killed") {
		t.Fatalf("slow agy: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	p, _ = newAgy(t, "slow", Config{Stream: true})
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("interrupted by SIGINT")) })
	_, err := p.Decide(ctx, request())
	if err == nil || errors.Is(err, provider.ErrTimeout) || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Fatalf("cancelled agy: %v", err)
	}
}

func TestMissing(t *testing.T) {
	p, err := New(Config{Path: "/nonexistent/agy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Decide(context.Background(), request()); exitcode.Of(err) != exitcode.ProgramNotFound {
		t.Fatalf("missing agy: %v (code %d)", err, exitcode.Of(err))
	}
}

func TestStripFence(t *testing.T) {
	for in, want := range map[string]string{
		"```json\n{\"a\":1}\n```": `{"a":1}`,
		"```\n{\"a\":1}\n```\n":   `{"a":1}`,
		`{"a":1}`:                 `{"a":1}`,
		"```{\"a\":1}```":         "```{\"a\":1}```",
	} {
		if got := stripFence(in); got != want {
			t.Errorf("stripFence(%q) = %q; want %q", in, got, want)
		}
	}
}

// FuzzParse feeds arbitrary agy output to both parsers: no panic, and
// every failure is a provider error.
func FuzzParse(f *testing.F) {
	f.Add(`{"status":"SUCCESS","response":"{\"action\":\"verify\"}","usage":{"input_tokens":1}}`, false)
	f.Add("agy: print timeout\n{\"event\":\"result\",\"result\":{\"status\":\"SUCCESS\",\"response\":\"{\"}}\n", true)
	f.Add(`{"event":"step_update","step_update":{"text_delta":"x","usage":{}}}`, false)
	f.Fuzz(func(t *testing.T, out string, printTimeout bool) {
		check := func(o outcome, err error) {
			if err == nil {
				_, err = o.classify()
			}
			var pe *provider.Error
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("error %v is not a provider error", err)
			}
		}
		check(parseJSON(out, nil, printTimeout, true))
		check(parseJSON(out, nil, printTimeout, false))
		sp := &streamParser{max: 1 << 12}
		_, _ = sp.Write([]byte(out))
		sp.flush()
		check(sp.outcome(printTimeout))
	})
}
