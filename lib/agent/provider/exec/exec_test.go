package exec

import (
	"bytes"
	"context"
	"errors"
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

func TestFailures(t *testing.T) {
	tests := []struct {
		name string
		body string
		cfg  Config
		is   error
		msg  string
	}{
		{"exit 1", "echo 'model quota exceeded' >&2; exit 1", Config{}, nil, "exit 1: model quota exceeded"},
		{"no decision", "echo 'I think you should run the tests.'", Config{}, provider.ErrProtocol, "no JSON object line"},
		{"pretty JSON", "printf '{\\n  \"action\": \"verify\"\\n}\\n'", Config{}, provider.ErrProtocol, "no JSON object line"},
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

func TestDecisionLine(t *testing.T) {
	for in, want := range map[string]string{
		"log\n{\"action\":\"verify\"}\n":              `{"action":"verify"}`,
		"{\"action\":\"verify\"}\nlog after\n":        `{"action":"verify"}`,
		"{\"a\":1}\n  {\"action\":\"finish\"}  \n":    `{"action":"finish"}`,
		"{broken\n{\"action\":\"verify\"}\n{broken\n": `{"action":"verify"}`,
	} {
		if got, ok := decisionLine(in); !ok || got != want {
			t.Errorf("decisionLine(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := decisionLine("no json\n[1,2]\n"); ok {
		t.Error("decisionLine found a decision in non-object output")
	}
}
