package execx

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// modes are the ways a task can be run without isolation: as the runner's
// direct child (the runner is subreaper), and under a per-task supervisor.
var modes = []struct {
	name string
	opt  Options
}{{"direct", Options{}}, {"supervised", Options{Supervised: true}}}

func TestExitCodesAndStatus(t *testing.T) {
	for _, m := range modes {
		p := policyFor(t, IsolationNone, "sh")
		tests := []struct {
			script     string
			status     Status
			exit, cli  int
			signal     string
			wantOutput string
		}{
			{"echo out; echo err >&2", StatusSucceeded, 0, 0, "", "out\nerr\n"},
			{"exit 3", StatusFailed, 3, 3, "", ""},
			{"kill -SEGV $$", StatusFailed, 128 + 11, 128 + 11, "SIGSEGV", ""},
		}
		for _, tt := range tests {
			res := mustRun(t, p, sh(tt.script), m.opt)
			if res.Status != tt.status || res.ExitCode != tt.exit || res.CLICode() != tt.cli || res.Signal != tt.signal || res.Output != tt.wantOutput {
				t.Errorf("%s: sh -c %q = status %s exit %d cli %d signal %q output %q; want %s %d %d %q %q",
					m.name, tt.script, res.Status, res.ExitCode, res.CLICode(), res.Signal, res.Output, tt.status, tt.exit, tt.cli, tt.signal, tt.wantOutput)
			}
			if res.ResolvedPath == "" || res.Argc != 3 || res.Program != "sh" || res.StartedAt.IsZero() || res.EndedAt.Before(res.StartedAt) {
				t.Errorf("%s: result header %+v incomplete", m.name, res)
			}
		}
	}
}

func TestTimeoutKillsGrandchild(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			task := sh(`sleep 1000 & echo $! > gc; wait`)
			task.Limits.Timeout = jsonx.Duration(time.Second) // time for a loaded machine to write gc
			res := mustRun(t, p, task, m.opt)
			if res.Status != StatusTimedOut || !res.TimedOut || res.Cancelled || res.CLICode() != exitcode.TimedOut {
				t.Errorf("status %s timed_out %v cancelled %v cli %d; want timed_out, 124", res.Status, res.TimedOut, res.Cancelled, res.CLICode())
			}
			waitGone(t, readPid(t, filepath.Join(p.Workspace, "gc")), time.Second)
		})
	}
}

// A program that ignores SIGTERM is killed kill_after later.
func TestKillAfter(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			task := sh(`trap "" TERM; echo ready; while :; do sleep 1; done`)
			task.Limits.Timeout = jsonx.Duration(time.Second) // time for a loaded machine to set the trap
			task.Limits.KillAfter = jsonx.Duration(200 * time.Millisecond)
			res := mustRun(t, p, task, m.opt)
			if res.Status != StatusTimedOut || res.Signal != "SIGKILL" || res.Output != "ready\n" {
				t.Errorf("status %s signal %q output %q; want timed_out by SIGKILL", res.Status, res.Signal, res.Output)
			}
			if d := time.Duration(res.DurationMS) * time.Millisecond; d < 1200*time.Millisecond {
				t.Errorf("ended after %v; SIGKILL must wait kill_after past the timeout", d)
			}
		})
	}
}

// A descendant that setsid()s away from the process group is still found
// (the runner or the supervisor is its subreaper) and killed when the task
// ends.
func TestSetsidEscapeeKilled(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			res := mustRun(t, p, sh(`setsid sh -c 'echo $$ > esc; exec sleep 1000' </dev/null >/dev/null 2>&1 &
				while [ ! -s esc ]; do sleep 0.01; done; echo parent done`), m.opt)
			if res.Status != StatusSucceeded || res.Output != "parent done\n" {
				t.Fatalf("status %s output %q", res.Status, res.Output)
			}
			waitGone(t, readPid(t, filepath.Join(p.Workspace, "esc")), time.Second)
		})
	}
}

// A descendant holding the output pipe open does not hang the runner:
// after the program exits it waits grace, then kills the descendant and
// returns what it captured, marked incomplete.
func TestPipeHolderBoundedByGrace(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			task := sh(`sleep 1000 & echo $! > holder; echo started`)
			task.Limits.Grace = jsonx.Duration(300 * time.Millisecond)
			start := time.Now()
			res := mustRun(t, p, task, m.opt)
			if took := time.Since(start); took > 60*time.Second { // a hang detector, not a timing test
				t.Errorf("Run took %v with a 300ms grace: the pipe holder hung it", took)
			}
			if res.Status != StatusSucceeded || !res.OutputIncomplete || res.Output != "started\n" {
				t.Errorf("status %s incomplete %v output %q; want succeeded, incomplete, %q", res.Status, res.OutputIncomplete, res.Output, "started\n")
			}
			waitGone(t, readPid(t, filepath.Join(p.Workspace, "holder")), time.Second)
		})
	}
}

// Output a descendant writes during grace is kept.
func TestGraceKeepsLateOutput(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh")
	task := sh(`(sleep 0.2; echo late) & echo early`)
	task.Limits.Grace = jsonx.Duration(time.Minute) // ends when the pipe closes, long before
	res := mustRun(t, p, task, Options{})
	if res.Output != "early\nlate\n" || res.OutputIncomplete {
		t.Errorf("output %q incomplete %v; want early and late, complete", res.Output, res.OutputIncomplete)
	}
}

func TestCancel(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { // cancel once the task is really running
				for {
					if b, err := os.ReadFile(filepath.Join(p.Workspace, "gc")); err == nil && len(b) > 0 {
						cancel()
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			res, err := Run(ctx, p, sh(`sleep 1000 & echo $! > gc; wait`), m.opt)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusCancelled || !res.Cancelled || res.TimedOut || res.CLICode() != exitcode.Cancelled {
				t.Errorf("status %s cancelled %v timed_out %v cli %d; want cancelled, 130", res.Status, res.Cancelled, res.TimedOut, res.CLICode())
			}
			waitGone(t, readPid(t, filepath.Join(p.Workspace, "gc")), time.Second)
		})
	}
}

// The caller's own deadline is a cancellation, not the task's timeout:
// both surface as a done context, the cause tells them apart.
func TestCallerDeadlineIsCancellation(t *testing.T) {
	p := policyFor(t, IsolationNone, "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, p, NewTask("sleep", "1000"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCancelled || res.TimedOut {
		t.Errorf("caller deadline gave status %s timed_out %v; want cancelled", res.Status, res.TimedOut)
	}
}

func TestOutputCap(t *testing.T) {
	p := policyFor(t, IsolationNone, "seq")
	var stream bytes.Buffer
	task := NewTask("seq", "1", "100000")
	task.Limits.OutputBytes = 1000
	res := mustRun(t, p, task, Options{Stream: &stream})
	var want strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if res.OutputBytes != int64(want.Len()) || !res.OutputTruncated {
		t.Errorf("output_bytes %d truncated %v; want %d, true", res.OutputBytes, res.OutputTruncated, want.Len())
	}
	if len(res.Output) > 1000 || !strings.HasPrefix(res.Output, "1\n2\n3\n") || !strings.HasSuffix(res.Output, "99999\n100000\n") ||
		!strings.Contains(res.Output, " bytes omitted]") {
		t.Errorf("output (%d bytes) = %q...; want head, marker and tail within 1000 bytes", len(res.Output), res.Output[:min(80, len(res.Output))])
	}
	// output_omitted is the marker's count: every byte written and not kept.
	if marker := omitted(res.OutputOmitted, true); !strings.Contains(res.Output, marker) ||
		res.OutputOmitted != res.OutputBytes-int64(len(res.Output)-len(marker)) {
		t.Errorf("output_omitted %d; want the marker's count, %d bytes written, %d shown", res.OutputOmitted, res.OutputBytes, len(res.Output))
	}
	if stream.String() != want.String() {
		t.Errorf("stream got %d bytes; want all %d", stream.Len(), want.Len())
	}
	if res := mustRun(t, p, NewTask("seq", "1", "10"), Options{}); res.OutputOmitted != 0 || res.OutputTruncated {
		t.Errorf("untruncated output: output_omitted %d truncated %v; want 0, false", res.OutputOmitted, res.OutputTruncated)
	}
}

func TestContextOrderAndStdin(t *testing.T) {
	p := policyFor(t, IsolationNone, "cat")
	writeFile(t, filepath.Join(p.Workspace, "a.md"), "first\n")
	writeFile(t, filepath.Join(p.Workspace, "docs", "b.md"), "second\n")
	task := NewTask("cat")
	task.Context = []string{"docs/b.md", "a.md", "docs/b.md"}
	res := mustRun(t, p, task, Options{Stdin: strings.NewReader("request\n")})
	if res.Output != "second\nfirst\nsecond\nrequest\n" {
		t.Errorf("stdin = %q; want context files in manifest order, then Options.Stdin", res.Output)
	}
	if res := mustRun(t, p, NewTask("cat"), Options{}); res.Output != "" || res.Status != StatusSucceeded {
		t.Errorf("no context: cat read %q; want /dev/null", res.Output)
	}
}

// A program that never reads its stdin does not block the runner.
func TestUnreadStdin(t *testing.T) {
	p := policyFor(t, IsolationNone, "true")
	writeFile(t, filepath.Join(p.Workspace, "big"), strings.Repeat("x", 4<<20))
	task := NewTask("true")
	task.Context = []string{"big"}
	task.Limits.ContextBytes = 8 << 20
	if res := mustRun(t, p, task, Options{}); res.Status != StatusSucceeded {
		t.Errorf("status %s", res.Status)
	}
}

func TestEnvironmentIsFresh(t *testing.T) {
	p := policyFor(t, IsolationNone, "env")
	p.EnvAllow = []string{"PATH", "HOME", "LANG", "GREETING", "PWD"}
	environ := []string{"PATH=/usr/bin:/bin", "HOME=/home/op", "AWS_SECRET_ACCESS_KEY=leak", "LANG=C.UTF-8", "PWD=/somewhere/else", "GREETING=hi"}
	res := mustRun(t, p, NewTask("env"), Options{Environ: environ})
	want := "GREETING=hi\nHOME=/home/op\nLANG=C.UTF-8\nPATH=/usr/bin:/bin\nPWD=" + realpath(t, p.Workspace) + "\n"
	if res.Output != want {
		t.Errorf("env =\n%s\nwant\n%s", res.Output, want)
	}
	task := NewTask("env")
	task.Env.Allow = []string{"PATH"}
	task.Env.Set = map[string]string{"GREETING": "set by task"}
	if res := mustRun(t, p, task, Options{Environ: environ}); res.Output != "GREETING=set by task\nPATH=/usr/bin:/bin\n" {
		t.Errorf("task allow+set: env = %q", res.Output)
	}
	p.EnvAllow = []string{}
	if res := mustRun(t, p, NewTask("env"), Options{Environ: environ}); res.Output != "" {
		t.Errorf("env_allow []: env = %q; want nothing", res.Output)
	}
}

func TestWorkingDirectory(t *testing.T) {
	p := policyFor(t, IsolationNone, "pwd")
	writeFile(t, filepath.Join(p.Workspace, "sub", "dir", "f"), "")
	task := NewTask("pwd")
	task.Dir = "sub/dir"
	if res := mustRun(t, p, task, Options{}); res.Output != realpath(t, filepath.Join(p.Workspace, "sub", "dir"))+"\n" {
		t.Errorf("pwd = %q", res.Output)
	}
}

func realpath(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
