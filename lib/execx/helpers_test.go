package execx

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// policyFor is a policy over a fresh workspace allowing the given programs.
func policyFor(t testing.TB, iso Isolation, allow ...string) *Policy {
	t.Helper()
	p := &Policy{TypeMeta: jsonx.Meta(KindPolicy), Allow: allow, Workspace: t.TempDir(), Isolation: iso}
	p.Default()
	return p
}

// sh is a task running a shell script.
// viewModes are the runs that get a mount view as root: one-shot landlock
// and strict (their supervisor builds it) and pooled landlock (the task's
// own process builds it).
var viewModes = []struct {
	name string
	iso  Isolation
	pool bool
}{
	{"landlock", IsolationLandlock, false},
	{"strict", IsolationStrict, false},
	{"landlock+pool", IsolationLandlock, true},
}

func sh(script string) *Task { return NewTask("sh", "-c", script) }

// mustRun runs and fails the test if no process started.
func mustRun(t testing.TB, p *Policy, task *Task, opt Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), p, task, opt)
	if err != nil {
		t.Fatalf("Run(%s %q) = %v; want a Result", task.Program, task.Args, err)
	}
	return res
}

// wantRefusal runs and checks that nothing started, with code and, if
// target is non-nil, an error matching it.
func wantRefusal(t testing.TB, p *Policy, task *Task, code int, target error, substr string) {
	t.Helper()
	res, err := Run(context.Background(), p, task, Options{})
	if err == nil {
		t.Fatalf("Run(%s %q) = Result{status %s, output %q}; want exit %d", task.Program, task.Args, res.Status, res.Output, code)
	}
	if got := exitcode.Of(err); got != code {
		t.Errorf("Run(%s %q) error %q has exit code %d; want %d", task.Program, task.Args, err, got, code)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("Run(%s %q) error %q; want errors.Is %v", task.Program, task.Args, err, target)
	}
	if substr != "" && !strings.Contains(err.Error(), substr) {
		t.Errorf("Run(%s %q) error %q; want it to mention %q", task.Program, task.Args, err, substr)
	}
}

// readPid waits for a pid file the task writes.
func readPid(t testing.TB, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %s: %q", path, b)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitGone waits until pid is no longer running, and reaps it if it is
// our zombie (the test binary may be a subreaper).
func waitGone(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for running(pid) {
		if time.Now().After(deadline) {
			_ = unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("process %d still running after %v", pid, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, _ = unix.Wait4(pid, nil, unix.WNOHANG, nil)
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// baseLayers are the isolation layers every Linux run has, whatever its
// mode (and a cgroup of its own where the runner can make one).
var baseLayers = func() []string {
	base := []string{"supervisor", "runner.non_dumpable", "session.new"}
	if cgroupUsable() {
		base = append(base, "cgroup")
	}
	return base
}()

// serveSupervisors are the pooled supervisors among pid's children.
func serveSupervisors(pid int) []int {
	var out []int
	for _, c := range shim.ChildrenOf(pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
		if s := string(b); s == shim.Arg0+"\x00serve\x00" || strings.HasPrefix(s, shim.Arg0+"\x00serve:") {
			out = append(out, c)
		}
	}
	return out
}
