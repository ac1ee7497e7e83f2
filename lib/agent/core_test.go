package agent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/mock"
)

// lockedBuffer is safe for the core's writers and the test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func waitText(t *testing.T, b *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(b.String(), want) {
			return
		}
	}
	t.Fatalf("%q never shown; got %q", want, b.String())
}

// TestLiveRunningLine: while a tool runs, the live writer (a terminal)
// shows a "running… Ns" line, and it is cleared before the step's
// progress line. The tool waits for a file the test creates only after it
// has seen the line: shown while running, by order, not by timing.
func TestLiveRunningLine(t *testing.T) {
	ws := workspace(t)
	live, progress := &lockedBuffer{}, &lockedBuffer{}
	p := mock.New(
		`{"action":"run_tool","program":"sh","args":["-c","while [ ! -e go-on ]; do sleep 0.01; done"]}`,
		`{"action":"finish","summary":"waited"}`,
	)
	done := make(chan *agent.Result, 1)
	go func() {
		res, err := agent.Run(context.Background(), config(ws), p, agent.Options{Live: live, LiveInterval: 5 * time.Millisecond, Progress: progress})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitText(t, live, "artagent: step 1/30 run_tool sh -c while")
	waitText(t, live, "running… ")
	if strings.Contains(progress.String(), "step 1/30") {
		t.Fatalf("step 1 reported while its tool ran: %q", progress.String())
	}
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.Status != agent.StatusFinished {
		t.Fatalf("result %+v", res)
	}
	if s := live.String(); !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("the running line was not cleared at the step's end: %q", s)
	}
}

// TestVerifyCutOffIsCancelled: a verify cut off by cancellation (Ctrl-C)
// is reported as cancelled, not as failed, and the debt stays open.
func TestVerifyCutOffIsCancelled(t *testing.T) {
	ws := workspace(t)
	cfg := config(ws)
	cfg.Verify = []string{"sh", "-c", "touch started; sleep 60"}
	p := mock.New(
		`{"action":"replace_text","path":"a.txt","old":"old","new":"new"}`,
		`{"action":"verify"}`,
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &lockedBuffer{}
	var events bytes.Buffer
	done := make(chan *agent.Result, 1)
	go func() {
		res, err := agent.Run(ctx, cfg, p, agent.Options{Progress: progress, Events: &events})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitFile(t, filepath.Join(ws, "started"))
	cancel()
	res := <-done
	if res == nil || res.Status != agent.StatusCancelled || !res.Debt {
		t.Fatalf("result %+v; want cancelled with debt open", res)
	}
	out := progress.String()
	if !strings.Contains(out, "step 2/30 verify: verify cancelled; debt open") || strings.Contains(out, "verify failed") {
		t.Errorf("progress says:\n%s\nwant the verify reported as cancelled", out)
	}
	if !strings.Contains(events.String(), "verification cancelled: debt remains open.") {
		t.Errorf("the verify observation does not say cancelled:\n%s", events.String())
	}
}
