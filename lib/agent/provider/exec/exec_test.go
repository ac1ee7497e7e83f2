package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// script writes an executable sh script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func request() *provider.Request {
	r := provider.NewRequest()
	r.Task, r.Step, r.MaxSteps = "fix it", 1, 30
	r.Allow, r.Verify, r.History = []string{"go"}, []string{"go", "test"}, []provider.Turn{}
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

func TestDecide(t *testing.T) {
	out := filepath.Join(t.TempDir(), "req.json")
	t.Setenv("REQ_OUT", out)
	t.Setenv("NOT_PASSED", "leak")
	logs := &syncBuf{}
	p, err := New(Config{
		Argv: []string{script(t, `cat > "$REQ_OUT"
echo "thinking about step $(grep -o '"step":[0-9]*' "$REQ_OUT")" >&2
echo "NOT_PASSED=${NOT_PASSED:-unset}" >&2
echo '{"action":"verify","reason":"from a script"}'
`)},
		Env: []string{"REQ_OUT"},
		Log: logs,
	})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := p.Decide(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"action":"verify","reason":"from a script"}` || reply.Usage != nil || reply.Latency <= 0 {
		t.Fatalf("reply %+v", reply)
	}
	got, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(got), `{"apiVersion":"art/v1alpha1","kind":"DecisionRequest","task":"fix it","step":1,`) || !strings.HasSuffix(string(got), "}\n") {
		t.Fatalf("request on stdin: %s", got)
	}
	if l := logs.String(); l != "exec: thinking about step \"step\":1\nexec: NOT_PASSED=unset\n" {
		t.Fatalf("logs %q", l)
	}
}

// The reply is the whole of standard output and nothing else: standard
// error is logs, however JSON-like, and a decision may span lines.
func TestStdoutIsTheReply(t *testing.T) {
	tests := []struct {
		name, body, reply, logs string
	}{
		{"JSON-looking logs after the decision",
			`echo '{"action":"verify"}'; echo '{"level":"info","msg":"done"}' >&2; echo '{"action":"finish"}' >&2`,
			`{"action":"verify"}`, "exec: {\"level\":\"info\",\"msg\":\"done\"}\nexec: {\"action\":\"finish\"}\n"},
		{"pretty-printed decision",
			`echo 'thinking' >&2; printf '{\n  "action": "read_file",\n  "path": "main.go"\n}\n'`,
			"{\n  \"action\": \"read_file\",\n  \"path\": \"main.go\"\n}", "exec: thinking\n"},
		{"interleaved, unterminated log line",
			`printf 'a' >&2; echo '{"action":' ; printf 'b\n\n c\r\n' >&2; echo '"verify"}'; printf 'tail' >&2`,
			"{\"action\":\n\"verify\"}", "exec: ab\nexec:  c\nexec: tail\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuf{}
			p, err := New(Config{Argv: []string{script(t, "cat >/dev/null\n"+tt.body)}, Log: logs})
			if err != nil {
				t.Fatal(err)
			}
			reply, err := p.Decide(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != tt.reply || logs.String() != tt.logs {
				t.Fatalf("reply %q logs %q; want %q, %q", reply.Text, logs.String(), tt.reply, tt.logs)
			}
			if _, err := provider.DecodeDecision([]byte(reply.Text)); err != nil {
				t.Fatalf("the loop refuses the reply %q: %v", reply.Text, err)
			}
		})
	}
}

// Standard output that is not exactly one JSON object is still the reply:
// the loop's decoder refuses it, and the model is told (a malformed reply,
// not a provider error that would end the run).
func TestMalformedStdoutIsAReply(t *testing.T) {
	for name, body := range map[string]string{
		"two objects": `echo '{"action":"verify"}'; echo '{"action":"finish","summary":"x"}'`,
		"prose":       `echo 'I think you should run the tests.'`,
		"nothing":     `echo 'all my words went to stderr' >&2`,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := New(Config{Argv: []string{script(t, body)}})
			if err != nil {
				t.Fatal(err)
			}
			reply, err := p.Decide(context.Background(), request())
			if err != nil {
				t.Fatalf("Decide: %v; want the reply back", err)
			}
			if _, err := provider.DecodeDecision([]byte(reply.Text)); err == nil {
				t.Fatalf("reply %q decoded; want it refused as malformed", reply.Text)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name string
		body string
		cfg  Config
		is   error
		msg  string
	}{
		{"exit 1", "echo 'model quota exceeded' >&2; echo '{}'; exit 1", Config{}, nil, "exit 1: model quota exceeded"},
		{"exit 2 without stderr", "echo 'usage: model [flags]'; exit 2", Config{}, nil, "exit 2: usage: model [flags]"},
		{"oversized", "i=0; while [ $i -lt 3000 ]; do echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done; echo '{\"action\":\"verify\"}'",
			Config{MaxReplyBytes: 4096}, provider.ErrTooLarge, "limit 4096"},
		{"killed", "kill -KILL $$", Config{}, nil, "killed by SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Argv = []string{script(t, tt.body)}
			p, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Decide(context.Background(), request())
			var pe *provider.Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.msg) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("error %v; want a provider error %v containing %q", err, tt.is, tt.msg)
			}
		})
	}
}

// Megabytes of logs do not block the command, are not part of the reply
// and are not an error: Log gets the first MaxReplyBytes of them and a
// line saying how much more there was.
func TestChattyStderr(t *testing.T) {
	logs := &syncBuf{}
	p, err := New(Config{
		Argv:          []string{script(t, `head -c 3000000 /dev/zero | tr '\0' '\n' | sed 's/^/log line/' >&2; echo '{"action":"verify"}'`)},
		MaxReplyBytes: 64 << 10,
		Log:           logs,
	})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := p.Decide(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"action":"verify"}` {
		t.Fatalf("reply %q", reply.Text)
	}
	l := logs.String()
	const total = 3000000 * len("log line\n")
	if !strings.HasPrefix(l, "exec: log line\n") || !strings.HasSuffix(l, fmt.Sprintf("exec: [%d more bytes of standard error not shown]\n", total-64<<10)) ||
		len(l) > 64<<10*2 {
		t.Fatalf("logs (%d bytes) end %q; want the capped head and the dropped count", len(l), l[max(0, len(l)-100):])
	}
}

// waitGone fails unless pid disappears within a few seconds.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for pid > 0 && syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the provider's child %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("PID_FILE", pidFile)
	p, err := New(Config{Argv: []string{script(t, `sleep 30 & echo $! > "$PID_FILE"; wait`)}, Env: []string{"PID_FILE"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Decide(context.Background(), request())
	if !errors.Is(err, provider.ErrTimeout) || time.Since(start) > 10*time.Second {
		t.Fatalf("error %v after %v; want ErrTimeout", err, time.Since(start))
	}
	waitGone(t, pidFile)
}

func TestCancel(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("PID_FILE", pidFile)
	p, err := New(Config{Argv: []string{script(t, `sleep 30 & echo $! > "$PID_FILE"; wait`)}, Env: []string{"PID_FILE"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("interrupted by SIGINT")) })
	_, err = p.Decide(ctx, request())
	if err == nil || errors.Is(err, provider.ErrTimeout) || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Fatalf("error %v; want the cancellation cause", err)
	}
	waitGone(t, pidFile)
}

func TestNotFound(t *testing.T) {
	p, err := New(Config{Argv: []string{"no-such-model-program"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Decide(context.Background(), request())
	if exitcode.Of(err) != exitcode.ProgramNotFound {
		t.Fatalf("error %v (code %d); want 127", err, exitcode.Of(err))
	}
	if _, err := New(Config{}); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("empty command: %v", err)
	}
}
