package worker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// policy allows names under e.ws.
func (e *env) policy(t *testing.T, allow ...string) *execx.Policy {
	t.Helper()
	p, err := worker.Policy("", execx.Narrowing{Allow: allow, Workspace: e.ws})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// work is where the env's workers make copy-mode trees: beside the
// queue, as artq does.
func (e *env) work() string { return filepath.Join(e.dir, "work") }

func (e *env) enqueueRun(t *testing.T, id string, spec *queue.RunSpec, argv ...string) {
	t.Helper()
	task, err := queue.ArgvTask(argv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Enqueue(bg, []queue.EnqueueRequest{{ID: id, Task: task, MaxAttempts: 2, Run: spec}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) drain(t *testing.T, cfg worker.Config) worker.Stats {
	t.Helper()
	cfg.Mode = worker.Drain
	if cfg.Policy == nil {
		cfg.Policy = e.pol
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = e.work()
	}
	stats, err := worker.Work(bg, e.q, cfg)
	if err != nil {
		t.Fatalf("Work = %v", err)
	}
	return stats
}

func (e *env) trace(t *testing.T, id string, attempt int) *queue.Trace {
	t.Helper()
	for _, ev := range e.events(t) {
		if ev.Type == queue.EventTrace && ev.Task == id && ev.Attempt == attempt {
			return ev.Trace
		}
	}
	t.Fatalf("no trace for %s attempt %d", id, attempt)
	return nil
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestWorkCopyWorkspace: each attempt runs in a fresh copy of its source
// under the worker's WorkDir, WORKDIR/ID-ATTEMPT (files, modes, symlinks as links,
// no .artq), the source is never touched, and the copy is removed when the
// task succeeded and kept when it failed.
func TestWorkCopyWorkspace(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(e.ws, "src")
	writeFile(t, filepath.Join(src, "a.txt"), "A\n", 0o644)
	writeFile(t, filepath.Join(src, "sub", "b.sh"), "echo b\n", 0o750)
	writeFile(t, filepath.Join(src, "ro", "c.txt"), "C\n", 0o444)
	writeFile(t, filepath.Join(src, ".artq", "x"), "not copied\n", 0o600)
	if err := os.Chmod(filepath.Join(src, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "ro"), 0o755) })
	if err := os.Symlink("a.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	look := `pwd; cat link; stat -c '%n %a' sub/b.sh ro ro/c.txt; test ! -e .artq && echo no-artq; test -L link && echo symlink; echo edited >> a.txt`
	spec := &queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: "src"}
	e.enqueueRun(t, "ok", spec, "sh", "-c", look)
	e.enqueueRun(t, "bad", spec, "sh", "-c", look+"; exit 3")
	stats := e.drain(t, worker.Config{Policy: e.policy(t, "sh", "cat", "stat"), OutputDir: out})
	if stats.Succeeded != 1 || stats.Failed != 1 {
		t.Fatalf("stats = %+v; want one success, one failure", stats)
	}
	realWork, _ := filepath.EvalSymlinks(e.work())
	for _, id := range []string{"ok", "bad"} {
		got := readFile(t, filepath.Join(out, id+".1.out"))
		want := worker.TreePath(realWork, id, 1) + "\nA\nsub/b.sh 750\nro 555\nro/c.txt 444\nno-artq\nsymlink\n"
		if got != want {
			t.Errorf("%s ran with output\n%s\nwant\n%s", id, got, want)
		}
	}
	if got := readFile(t, filepath.Join(src, "a.txt")); got != "A\n" {
		t.Errorf("the source changed: a.txt = %q", got)
	}
	if exists(worker.TreePath(e.work(), "ok", 1)) {
		t.Error("the workspace of a task that succeeded was kept")
	}
	kept := worker.TreePath(e.work(), "bad", 1)
	if got := readFile(t, filepath.Join(kept, "a.txt")); got != "A\nedited\n" {
		t.Errorf("the failed task's workspace holds a.txt = %q; want its edit kept for inspection", got)
	}
	if exists(filepath.Join(e.ws, ".artq")) {
		t.Error("copy mode made .artq in the workspace")
	}

	// A retry starts from the source again, in a directory of its own;
	// the first attempt's stays.
	if _, err := e.q.Retry(bg, "bad"); err != nil {
		t.Fatal(err)
	}
	e.drain(t, worker.Config{Policy: e.policy(t, "sh", "cat", "stat"), Keep: worker.KeepAlways})
	second := worker.TreePath(e.work(), "bad", 2)
	if got := readFile(t, filepath.Join(second, "a.txt")); got != "A\nedited\n" {
		t.Errorf("attempt 2's a.txt = %q; want a fresh copy with one edit", got)
	}
	if !exists(kept) {
		t.Error("attempt 1's workspace went away")
	}
}

// TestWorkKeepPolicies: never removes even a failed task's workspace,
// always keeps even a successful one's.
func TestWorkKeepPolicies(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "f"), "x", 0o600)
	spec := &queue.RunSpec{Workspace: queue.WorkspaceCopy}
	e.enqueueRun(t, "fails", spec, "sh", "-c", "exit 1")
	e.drain(t, worker.Config{Keep: worker.KeepNever})
	if exists(worker.TreePath(e.work(), "fails", 1)) {
		t.Error("keep never left a failed task's workspace")
	}
	e.enqueueRun(t, "works", spec, "sh", "-c", "test -e f")
	e.drain(t, worker.Config{Keep: worker.KeepAlways})
	if e.status(t, "works").State != queue.StateSucceeded {
		t.Fatalf("works = %+v", e.status(t, "works"))
	}
	if !exists(filepath.Join(worker.TreePath(e.work(), "works", 1), "f")) {
		t.Error("keep always removed a workspace")
	}
	if exists(filepath.Join(worker.TreePath(e.work(), "works", 1), ".artq")) {
		t.Error("a copy of the whole workspace holds the per-attempt workspaces")
	}
	if _, err := worker.Work(bg, e.q, worker.Config{Policy: e.pol, Keep: "sometimes", Mode: worker.Drain}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("keep sometimes: %v; want a usage error", err)
	}
}

// TestWorkWorkspaceReplacesLeftover: a directory an earlier run of the same
// attempt left (its worker died before the trace) is replaced, not reused.
func TestWorkWorkspaceReplacesLeftover(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "f"), "fresh", 0o600)
	writeFile(t, filepath.Join(worker.TreePath(e.work(), "again", 1), "f"), "stale", 0o600)
	writeFile(t, filepath.Join(worker.TreePath(e.work(), "again", 1), "junk"), "", 0o600)
	e.enqueueRun(t, "again", &queue.RunSpec{Workspace: queue.WorkspaceCopy}, "sh", "-c", `test "$(cat f)" = fresh && test ! -e junk`)
	e.drain(t, worker.Config{})
	if ts := e.status(t, "again"); ts.State != queue.StateSucceeded {
		t.Errorf("again = %+v; want it to run in a fresh copy", ts.Last)
	}
}

// TestWorkSourceRefused: a source that is missing, a file, or resolves
// outside the workspace fails the task as rejected (126) without running
// it.
func TestWorkSourceRefused(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "file"), "x", 0o600)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.ws, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"missing", "file", "escape"} {
		e.enqueueRun(t, src, &queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: src}, "sh", "-c", mark)
	}
	e.drain(t, worker.Config{})
	for _, id := range []string{"missing", "file", "escape"} {
		ts := e.status(t, id)
		if ts.State != queue.StateFailed || ts.Last.Status != execx.StatusRejected || ts.Last.ExitCode != exitcode.Refused {
			t.Errorf("%s = %s %+v; want failed, rejected 126", id, ts.State, ts.Last)
		}
	}
	if runs := e.runs(t); len(runs) != 0 {
		t.Errorf("refused tasks ran: %v", runs)
	}
}

func TestRunSpecValidate(t *testing.T) {
	cases := []struct {
		spec queue.RunSpec
		want string // "" for valid
	}{
		{queue.RunSpec{}, ""},
		{queue.RunSpec{Workspace: queue.WorkspaceCopy}, ""},
		{queue.RunSpec{Workspace: queue.WorkspaceWorktree, Source: "repo/sub"}, ""},
		{queue.RunSpec{Acceptance: []string{"go", "test", "./..."}}, ""},
		{queue.RunSpec{Source: "x"}, "run.source"},
		{queue.RunSpec{Workspace: "overlay"}, "run.workspace"},
		{queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: "/etc"}, "absolute"},
		{queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: "a/../../b"}, "parent"},
		{queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: "a//b"}, "clean"},
		{queue.RunSpec{Workspace: queue.WorkspaceCopy, Source: ".artq/work/x-1"}, ".artq"},
		{queue.RunSpec{Acceptance: []string{""}}, "run.acceptance[0]"},
		{queue.RunSpec{Acceptance: []string{"go", "a\x00b"}}, "NUL"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || exitcode.Of(err) != exitcode.Usage) {
			t.Errorf("Validate(%+v) = %v; want %q", c.spec, err, c.want)
		}
	}
}

// TestEnqueueRunSpecIdentity: the run spec is part of a task's identity.
func TestEnqueueRunSpecIdentity(t *testing.T) {
	e := newEnv(t)
	task, _ := queue.ArgvTask([]string{"true"})
	spec := &queue.RunSpec{Workspace: queue.WorkspaceCopy, Acceptance: []string{"true"}}
	r := []queue.EnqueueRequest{{ID: "a", Task: task, MaxAttempts: 1, Run: spec}}
	if _, err := e.q.Enqueue(bg, r); err != nil {
		t.Fatal(err)
	}
	if out, err := e.q.Enqueue(bg, r); err != nil || out[0].Created {
		t.Errorf("same spec again: %+v %v; want idempotent", out, err)
	}
	_, err := e.q.Enqueue(bg, []queue.EnqueueRequest{{ID: "a", Task: task, MaxAttempts: 1}})
	if exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("same manifest, no spec: %v; want a conflict", err)
	}
	// A shared workspace with nothing else is no spec at all: the record
	// is the one a task without a spec always had.
	if _, err := e.q.Enqueue(bg, []queue.EnqueueRequest{{ID: "b", Task: task, MaxAttempts: 1, Run: &queue.RunSpec{Workspace: queue.WorkspaceShared}}}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.events(t) {
		if ev.Task == "b" && ev.Run != nil {
			t.Errorf("a zero spec was stored: %s", ev.Run)
		}
		if ev.Task == "a" && string(ev.Run) != `{"workspace":"copy","acceptance":["true"]}` {
			t.Errorf("stored spec = %s", ev.Run)
		}
	}
}

// TestWorkAcceptance: after the command exits 0 the worker runs the
// acceptance command itself in the same workspace; the task succeeds only
// if it passes, and the trace holds both results.
func TestWorkAcceptance(t *testing.T) {
	e := newEnv(t)
	copyWS := func(acc ...string) *queue.RunSpec {
		return &queue.RunSpec{Workspace: queue.WorkspaceCopy, Acceptance: acc}
	}
	e.enqueueRun(t, "passes", copyWS("test", "-e", "done"), "sh", "-c", "echo > done")
	e.enqueueRun(t, "unmet", copyWS("test", "-e", "done"), "sh", "-c", "echo 'all good, trust me'")
	e.enqueueRun(t, "cmdfails", copyWS("sh", "-c", "echo > ../../../accept-ran"), "sh", "-c", "exit 4")
	e.enqueueRun(t, "refused", copyWS("cat", "done"), "sh", "-c", "echo > done")
	e.enqueueRun(t, "shared", &queue.RunSpec{Acceptance: []string{"test", "-e", "shared-done"}}, "sh", "-c", "echo > shared-done")
	e.drain(t, worker.Config{Policy: e.policy(t, "sh", "test"), Concurrency: 2})

	want := map[string]struct {
		state      queue.TaskState
		acceptance execx.Status // "" when it must not have run
		code       int
	}{
		"passes":   {queue.StateSucceeded, execx.StatusSucceeded, 0},
		"unmet":    {queue.StateFailed, execx.StatusFailed, 1},
		"cmdfails": {queue.StateFailed, "", 0},
		"refused":  {queue.StateFailed, execx.StatusRejected, exitcode.Refused},
		"shared":   {queue.StateSucceeded, execx.StatusSucceeded, 0},
	}
	for id, w := range want {
		ts := e.status(t, id)
		tr := e.trace(t, id, 1)
		if ts.State != w.state {
			t.Errorf("%s is %s; want %s", id, ts.State, w.state)
		}
		if w.acceptance == "" {
			if tr.Acceptance != nil || ts.Last.Acceptance != nil {
				t.Errorf("%s: an acceptance ran after the command failed: %+v", id, tr.Acceptance)
			}
			continue
		}
		if tr.Status != execx.StatusSucceeded || tr.Acceptance == nil || tr.Acceptance.Status != w.acceptance || tr.Acceptance.ExitCode != w.code {
			t.Errorf("%s: trace %+v acceptance %+v; want command succeeded, acceptance %s exit %d", id, tr, tr.Acceptance, w.acceptance, w.code)
		}
		if a := ts.Last.Acceptance; a == nil || a.Status != w.acceptance {
			t.Errorf("%s: status last = %+v; want the acceptance in it", id, ts.Last)
		}
	}
	if exists(filepath.Join(e.ws, "accept-ran")) {
		t.Error("the acceptance of a failed command ran")
	}
	// The workspace of a task whose acceptance failed is kept.
	if !exists(worker.TreePath(e.work(), "unmet", 1)) || exists(worker.TreePath(e.work(), "passes", 1)) {
		t.Error("workspaces: want unmet's kept and passes' removed")
	}
}

// TestRecoveryHonoursAcceptance: a worker that died after tracing a
// failed acceptance is reconciled to failed, never to the command's
// success.
func TestRecoveryHonoursAcceptance(t *testing.T) {
	e := newEnv(t)
	e.enqueue(t, "a", 1, "true")
	forge(t, e, "a", "ghost", queue.EventStarted)
	var last uint64
	e.q.View(bg, func(st *queue.State) error { last = st.Task("a").LastSeq; return nil })
	tr := &queue.Trace{Status: execx.StatusSucceeded, Acceptance: &queue.Trace{Status: execx.StatusFailed, ExitCode: 1}}
	if _, err := e.b.Append(bg, []queue.Proposal{{Event: &queue.Event{Time: time.Now(), Type: queue.EventTrace, Task: "a", Attempt: 1, Trace: tr}, Expect: last}}); err != nil {
		t.Fatal(err)
	}
	q, err := queue.Open(bg, e.b)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := q.Status(bg, "a")
	if ts.State != queue.StateFailed {
		t.Errorf("recovered = %s; want failed (the acceptance failed)", ts.State)
	}
	evs := e.events(t)
	if r := evs[len(evs)-1].Reason; !strings.Contains(r, "traced as succeeded, acceptance failed") {
		t.Errorf("recovery reason = %q", r)
	}
}

func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	writeFile(t, filepath.Join(dir, "tracked.txt"), "v1\n", 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func worktrees(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "worktree", "list", "--porcelain")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestWorkWorktree: worktree mode runs each attempt in a detached worktree
// of the source's HEAD, made and removed through git under the worker's
// policy.
func TestWorkWorktree(t *testing.T) {
	e := newEnv(t)
	repo := filepath.Join(e.ws, "repo")
	gitRepo(t, repo)
	writeFile(t, filepath.Join(repo, "untracked.txt"), "not in HEAD\n", 0o644)
	spec := &queue.RunSpec{Workspace: queue.WorkspaceWorktree, Source: "repo"}
	e.enqueueRun(t, "wt", spec, "sh", "-c", `test ! -e untracked.txt && echo v2 >> tracked.txt && test "$(git status --porcelain)" = " M tracked.txt"`)
	e.enqueueRun(t, "wtbad", spec, "sh", "-c", `echo v2 >> tracked.txt; exit 1`)
	e.drain(t, worker.Config{Policy: e.policy(t, "sh", "git", "test")})
	if ts := e.status(t, "wt"); ts.State != queue.StateSucceeded {
		t.Fatalf("wt = %s %+v", ts.State, ts.Last)
	}
	list := worktrees(t, repo)
	if strings.Contains(list, "wt-1") {
		t.Errorf("the succeeded task's worktree is still registered:\n%s", list)
	}
	if exists(worker.TreePath(e.work(), "wt", 1)) {
		t.Error("the succeeded task's worktree is still on disk")
	}
	if !strings.Contains(list, "wtbad-1") || readFile(t, filepath.Join(worker.TreePath(e.work(), "wtbad", 1), "tracked.txt")) != "v1\nv2\n" {
		t.Errorf("the failed task's worktree was not kept:\n%s", list)
	}
	if got := readFile(t, filepath.Join(repo, "tracked.txt")); got != "v1\n" {
		t.Errorf("the source repository changed: %q", got)
	}

	// Without git in the policy, worktree mode is refused: the worker
	// starts nothing its policy does not allow.
	e.enqueueRun(t, "nogit", spec, "sh", "-c", mark)
	e.drain(t, worker.Config{Policy: e.policy(t, "sh")})
	if ts := e.status(t, "nogit"); ts.State != queue.StateFailed || ts.Last.Status != execx.StatusRejected {
		t.Errorf("nogit = %s %+v; want failed, rejected", ts.State, ts.Last)
	}
	if len(e.runs(t)) != 0 {
		t.Error("the task ran without its worktree")
	}
}

// FuzzDecodeRunSpec: the stored run spec decoder never panics, and what
// it accepts is valid and survives a round trip unchanged.
func FuzzDecodeRunSpec(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"workspace":"copy","source":"src/app","acceptance":["go","test","./..."]}`,
		`{"workspace":"worktree"}`, `{"acceptance":["true"]}`, `{"workspace":"shared","source":"x"}`,
		`{"workspace":"copy","workspace":"copy"}`, `{"acceptance":[""]}`, `{"source":"../x"}`, `{"x":1}`, `[]`, `{"acceptance":["a"]} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := queue.DecodeRunSpec(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("DecodeRunSpec(%q) = %v: not a usage error", data, err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("accepted %q but it does not validate: %v", data, err)
		}
		enc, err := jsonx.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := queue.DecodeRunSpec(enc)
		if err != nil || again.Mode() != spec.Mode() || again.Source != spec.Source || strings.Join(again.Acceptance, "\x00") != strings.Join(spec.Acceptance, "\x00") {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", enc, again, err, spec)
		}
	})
}

// TestWorkAcceptanceAfterCancel: a cancel that arrives just as the command
// succeeds does not let the task succeed without its acceptance: the
// acceptance is recorded cancelled, and so is the task.
func TestWorkAcceptanceAfterCancel(t *testing.T) {
	e := newEnv(t)
	e.enqueueRun(t, "racy", &queue.RunSpec{Acceptance: []string{"true"}}, "true")
	var steps []string
	run := func(ctx context.Context, p *execx.Policy, task *execx.Task, opt execx.Options) (*execx.Result, error) {
		steps = append(steps, task.Program)
		if len(steps) == 1 {
			// The command: a cancel is requested while it runs, and it
			// finishes successfully as the worker acts on the request.
			if _, err := queue.New(e.b).Cancel(bg, "racy"); err != nil {
				return nil, err
			}
			<-ctx.Done()
			return &execx.Result{Program: task.Program, Status: execx.StatusSucceeded}, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		return &execx.Result{Program: task.Program, Status: execx.StatusSucceeded}, nil
	}
	e.drain(t, worker.Config{Run: run, Poll: 20 * time.Millisecond})
	if got := strings.Join(steps, " "); got != "true true" {
		t.Errorf("runs = %q; want the command, then the acceptance attempted", got)
	}
	ts := e.status(t, "racy")
	tr := e.trace(t, "racy", 1)
	if ts.State != queue.StateCancelled || tr.Acceptance == nil || tr.Acceptance.Status != execx.StatusCancelled {
		t.Errorf("racy = %s, trace %+v acceptance %+v; want cancelled with a cancelled acceptance", ts.State, tr, tr.Acceptance)
	}
}
