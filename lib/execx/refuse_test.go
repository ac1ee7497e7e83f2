package execx

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Everything refused here is refused before any process starts: Run
// returns an error with the exit code of README.md, "Exit codes" and no Result.
func TestRefusedBeforeStart(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh", "cat", "notexec", "missing")
	ws := p.Workspace
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "notexec"), "#!/bin/sh\n")
	p.Path = []string{"/usr/bin", "/bin", bin}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "s3cret")
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "secret-link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "big.txt"), string(make([]byte, 2048)))
	writeFile(t, filepath.Join(ws, "sub", "ok.txt"), "ok")

	withDir := func(dir string) *Task { task := sh("true"); task.Dir = dir; return task }
	withCtx := func(paths ...string) *Task { task := NewTask("cat"); task.Context = paths; return task }
	tests := []struct {
		name   string
		task   *Task
		code   int
		target error
		substr string
	}{
		{"unlisted program", NewTask("rm", "-rf", "/"), exitcode.Refused, ErrNotAllowed, `"rm"`},
		{"path as program", NewTask("/bin/sh"), exitcode.Refused, ErrNotAllowed, "bare program name"},
		{"relative path as program", NewTask("./sh"), exitcode.Refused, ErrNotAllowed, ""},
		{"dot dot program", NewTask(".."), exitcode.Refused, ErrNotAllowed, ""},
		{"listed but missing", NewTask("missing"), exitcode.ProgramNotFound, ErrProgramNotFound, ""},
		{"listed, found, not executable", NewTask("notexec"), exitcode.Refused, ErrNotExecutable, "notexec"},
		{"dir with ..", withDir("../x"), exitcode.Refused, fsx.ErrEscape, "task.dir"},
		{"absolute dir", withDir("/tmp"), exitcode.Refused, fsx.ErrEscape, "absolute"},
		{"dir through symlink out", withDir("escape"), exitcode.Refused, fsx.ErrEscape, "outside the workspace"},
		{"dir missing", withDir("nope"), exitcode.Usage, nil, "nope"},
		{"dir is a file", withDir("big.txt"), exitcode.Usage, nil, "not a directory"},
		{"context ..", withCtx("sub/ok.txt", "../secret"), exitcode.Refused, fsx.ErrEscape, "task.context"},
		{"context absolute", withCtx(filepath.Join(outside, "secret")), exitcode.Refused, fsx.ErrEscape, ""},
		{"context symlink out", withCtx("secret-link"), exitcode.Refused, fsx.ErrEscape, "outside"},
		{"context over context_bytes", func() *Task { t := withCtx("big.txt"); t.Limits.ContextBytes = 1024; return t }(), exitcode.Refused, ErrContextTooLarge, "2048"},
		{"context not regular", withCtx("sub"), exitcode.Usage, nil, "not a regular file"},
		{"context missing", withCtx("absent.txt"), exitcode.Usage, nil, "absent.txt"},
		{"env allow beyond policy", func() *Task { t := sh("env"); t.Env.Allow = []string{"PATH", "AWS_SECRET_ACCESS_KEY"}; return t }(), exitcode.Refused, ErrEnvNotAllowed, "AWS_SECRET_ACCESS_KEY"},
		{"env set beyond policy", func() *Task { t := sh("env"); t.Env.Set = map[string]string{"LD_PRELOAD": "/x.so"}; return t }(), exitcode.Refused, ErrEnvNotAllowed, "LD_PRELOAD"},
		{"limit above policy", func() *Task { t := sh("true"); t.Limits.Timeout = jsonx.Duration(48 * time.Hour); return t }(), exitcode.Refused, nil, "task.limits.timeout: 48h0m0s exceeds the policy maximum 24h0m0s"},
		{"invalid task", func() *Task { t := sh("true"); t.Args = append(t.Args, "a\x00b"); return t }(), exitcode.Usage, nil, "task.args[2]: contains a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRefusal(t, p, tt.task, tt.code, tt.target, tt.substr) })
	}
}

func TestIsolationUnavailable(t *testing.T) {
	p := policyFor(t, IsolationSeatbelt, "true")
	wantRefusal(t, p, NewTask("true"), exitcode.Internal, ErrIsolationUnavailable, "seatbelt")
	p.IsolationBestEffort = true
	res := mustRun(t, p, NewTask("true"), Options{})
	if res.Status != StatusSucceeded || res.Isolation.Backend != IsolationSeatbelt ||
		!slices.Equal(res.Isolation.Enforced, baseLayers) || len(res.Isolation.Dropped) != 1 || !strings.HasPrefix(res.Isolation.Dropped[0], "seatbelt: ") {
		t.Errorf("best-effort seatbelt on Linux = %s %+v; want succeeded with only %v enforced and seatbelt dropped", res.Status, res.Isolation, baseLayers)
	}
}

// A nil policy or task is a programming error reported as invalid input,
// not a panic.
func TestNilDocuments(t *testing.T) {
	if _, err := Run(t.Context(), nil, NewTask("true"), Options{}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("Run(nil policy) = %v; want exit 2", err)
	}
	if _, err := Run(t.Context(), policyFor(t, IsolationNone, "true"), nil, Options{}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("Run(nil task) = %v; want exit 2", err)
	}
}

// A program that passes every check but cannot be executed (no interpreter
// line, not ELF) is refused (126) in every start mode — directly, through
// the exec shim (rlimits), under a supervisor, and under a supervisor with
// an exec stage — and nothing is left running.
func TestExecFailureInEveryMode(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "garbage"), "\x00\x01\x02 not a program\n")
	if err := os.Chmod(filepath.Join(bin, "garbage"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name    string
		opt     Options
		rlimits bool
	}{{"direct", Options{}, false}, {"exec shim", Options{}, true}, {"supervised", Options{Supervised: true}, false}, {"supervised exec stage", Options{Supervised: true}, true}} {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "garbage")
			p.Path = []string{bin}
			task := NewTask("garbage")
			if m.rlimits {
				task.Limits.OpenFiles = 256
			}
			res, err := Run(t.Context(), p, task, m.opt)
			if err == nil || exitcode.Of(err) != exitcode.Refused || !strings.Contains(err.Error(), "exec format error") {
				t.Fatalf("Run = %+v, %v (exit %d); want 126, exec format error", res, err, exitcode.Of(err))
			}
		})
	}
}

// A workspace or writable tree that is the whole filesystem (/, or a link
// to it) is refused under every backend that confines writes — the run
// would be unconfined in all but name — and allowed under none, which
// confines nothing anyway.
func TestWholeFilesystemRefused(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink("/", root); err != nil {
		t.Fatal(err)
	}
	for _, iso := range []Isolation{IsolationLandlock, IsolationStrict, IsolationSeatbelt} {
		for _, ws := range []string{"/", root} {
			p := policyFor(t, iso, "true")
			p.Workspace = ws
			wantRefusal(t, p, NewTask("true"), exitcode.Refused, nil, "workspace "+ws+" is the whole filesystem: isolation "+string(iso))
		}
		p := policyFor(t, iso, "true")
		_, err := Run(t.Context(), p, NewTask("true"), Options{Writable: []string{root}})
		if exitcode.Of(err) != exitcode.Refused || err == nil || !strings.Contains(err.Error(), "writable tree "+root+" is the whole filesystem") {
			t.Errorf("%s with Options.Writable %s: %v; want refused (126), naming it", iso, root, err)
		}
	}
	p := policyFor(t, IsolationNone, "true")
	p.Workspace = "/"
	if res := mustRun(t, p, NewTask("true"), Options{}); res.Status != StatusSucceeded {
		t.Errorf("none with workspace /: %s; want it run", res.Status)
	}
}
