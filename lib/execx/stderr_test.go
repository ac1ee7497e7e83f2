//go:build linux

package execx

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
)

// lockedBuf is a Stderr sink a test may read while the runner writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMode is one way a task is started. A separate stderr reaches the
// program as its fd 2 through different code in each: the runner's own
// fork, the exec shim (rlimits), the supervisor (fd 7), the supervisor's
// exec stage, a landlocked thread, and strict's namespaced supervisor.
type startMode struct {
	name     string
	iso      Isolation
	opt      Options
	rlimits  bool // through the exec shim, or the supervisor's exec stage
	landlock bool
	strict   bool
}

var startModes = []startMode{
	{name: "direct", iso: IsolationNone},
	{name: "direct+shim", iso: IsolationNone, rlimits: true},
	{name: "supervised", iso: IsolationNone, opt: Options{Supervised: true}},
	{name: "supervised+stage", iso: IsolationNone, opt: Options{Supervised: true}, rlimits: true},
	{name: "landlock", iso: IsolationLandlock, landlock: true},
	{name: "landlock+supervised", iso: IsolationLandlock, opt: Options{Supervised: true}, landlock: true},
	{name: "strict", iso: IsolationStrict, landlock: true, strict: true},
	// On a long-lived supervisor of the shared test pool, which ran other
	// tasks before (with rlimits: its exec stage).
	{name: "pooled", iso: IsolationNone, opt: Options{Supervised: true, Pool: testPool}},
	{name: "pooled+stage", iso: IsolationNone, opt: Options{Supervised: true, Pool: testPool}, rlimits: true},
	{name: "landlock+pooled", iso: IsolationLandlock, opt: Options{Supervised: true, Pool: testPool}, landlock: true},
}

// setup skips a mode this kernel cannot run and returns a policy and a
// task running script in that mode.
func (m startMode) setup(t *testing.T, script string) (*Policy, *Task) {
	t.Helper()
	if m.landlock {
		needLandlock(t)
	}
	if m.strict {
		needNamespaces(t)
	}
	p := policyFor(t, m.iso, "sh")
	task := sh(script)
	task.Limits.Timeout = jsonx.Duration(time.Minute) // a hang fails, it does not stall the suite
	if m.rlimits {
		task.Limits.OpenFiles = 256
	}
	return p, task
}

// With Options.Stderr the program's stderr is a pipe of its own: Output,
// its counts and Stream carry stdout alone, the writer gets stderr, and
// the program holds nothing but fds 0-2 (the supervisor's fd 7 is not
// leaked into it).
func TestStderrSeparate(t *testing.T) {
	for _, m := range startModes {
		t.Run(m.name, func(t *testing.T) {
			p, task := m.setup(t, `ls /proc/self/fd | tr '\n' ' '; echo; echo out1; echo err1 >&2
				echo out2; echo '{"json":"log"}' >&2; exit 3`)
			errs, stream := &lockedBuf{}, &lockedBuf{}
			opt := m.opt
			opt.Stderr, opt.Stream = errs, stream
			res := mustRun(t, p, task, opt)
			wantOut := childFDs(t) + "\nout1\nout2\n"
			if res.Output != wantOut || res.OutputBytes != int64(len(wantOut)) || stream.String() != wantOut {
				t.Errorf("output %q (%d bytes), stream %q; want stdout alone: %q", res.Output, res.OutputBytes, stream.String(), wantOut)
			}
			if res.ExitCode != 3 || res.Status != StatusFailed || res.OutputIncomplete || res.OutputTruncated {
				t.Errorf("exit %d status %s incomplete %v truncated %v; want exit 3, failed, complete", res.ExitCode, res.Status, res.OutputIncomplete, res.OutputTruncated)
			}
			wantErr := "err1\n{\"json\":\"log\"}\n"
			if errs.String() != wantErr || res.StderrBytes != int64(len(wantErr)) || res.StderrDropped != 0 {
				t.Errorf("stderr %q, stderr_bytes %d, dropped %d; want %q, %d, 0", errs.String(), res.StderrBytes, res.StderrDropped, wantErr, len(wantErr))
			}
		})
	}
}

// childFDs is what ls /proc/self/fd prints (as one line) in a child that
// holds only fds 0-2: those and ls's own directory fd 3. Nothing the test
// process inherited without close-on-exec may appear (TestNoInheritedFDs).
func childFDs(*testing.T) string { return "0 1 2 3 " }

// A child that writes megabytes to stderr never blocks: the pipe is
// drained past the cap, the writer gets exactly the first StderrBytes
// bytes and the rest is counted. Stdout written after the flood proves
// the child got past it.
func TestStderrChattyCapped(t *testing.T) {
	const flood, limit = 6 << 20, 4096
	for _, m := range startModes {
		t.Run(m.name, func(t *testing.T) {
			p, task := m.setup(t, `echo before; head -c 6291456 /dev/zero | tr '\0' e >&2; echo after`)
			errs := &lockedBuf{}
			opt := m.opt
			opt.Stderr, opt.StderrBytes = errs, limit
			res := mustRun(t, p, task, opt)
			if res.Status != StatusSucceeded || res.Output != "before\nafter\n" {
				t.Fatalf("status %s output %q; want succeeded, both stdout lines", res.Status, res.Output)
			}
			if errs.String() != strings.Repeat("e", limit) || res.StderrBytes != flood || res.StderrDropped != flood-limit {
				t.Errorf("writer got %d bytes, stderr_bytes %d, dropped %d; want %d, %d, %d", len(errs.String()), res.StderrBytes, res.StderrDropped, limit, flood, flood-limit)
			}
		})
	}
}

// Without StderrBytes the writer gets DefaultStderrBytes at most; a
// writer that fails is dropped and everything after is counted as
// dropped, while the child runs on undisturbed.
func TestStderrDefaultCapAndFailingWriter(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh")
	errs := &lockedBuf{}
	res := mustRun(t, p, sh(`head -c 1100000 /dev/zero >&2; echo done`), Options{Stderr: errs})
	if len(errs.String()) != DefaultStderrBytes || res.StderrBytes != 1100000 || res.StderrDropped != 1100000-DefaultStderrBytes || res.Output != "done\n" {
		t.Errorf("writer got %d, stderr_bytes %d, dropped %d, output %q; want %d, 1100000, %d, done", len(errs.String()), res.StderrBytes, res.StderrDropped, res.Output, DefaultStderrBytes, 1100000-DefaultStderrBytes)
	}
	fw := &failWriter{}
	res = mustRun(t, p, sh(`echo a >&2; sleep 0.05; echo b >&2; echo done`), Options{Stderr: fw})
	if fw.n != 1 || res.StderrBytes != 4 || res.StderrDropped != 4 || res.Output != "done\n" || res.Status != StatusSucceeded {
		t.Errorf("failing writer: %d writes, stderr_bytes %d, dropped %d, output %q, status %s; want 1 write, 4, 4, done, succeeded", fw.n, res.StderrBytes, res.StderrDropped, res.Output, res.Status)
	}
}

// The grace rule covers the stderr pipe: a descendant holding only stderr
// open after the program exits is killed grace later and the Result is
// marked incomplete; one that finishes writing within grace is waited for.
func TestStderrHolderBoundedByGrace(t *testing.T) {
	for _, m := range startModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel() // each mode waits out its own grace
			p, task := m.setup(t, `sleep 1000 >/dev/null & echo $! > holder; echo started; echo e >&2`)
			task.Limits.Grace = jsonx.Duration(300 * time.Millisecond)
			errs := &lockedBuf{}
			opt := m.opt
			opt.Stderr = errs
			start := time.Now()
			res := mustRun(t, p, task, opt)
			if took := time.Since(start); took > 50*time.Second { // a hang detector, not a timing test
				t.Errorf("Run took %v with a 300ms grace: the stderr holder hung it", took)
			}
			if res.Status != StatusSucceeded || !res.OutputIncomplete || res.Output != "started\n" || errs.String() != "e\n" {
				t.Errorf("status %s incomplete %v output %q stderr %q; want succeeded, incomplete, started, e", res.Status, res.OutputIncomplete, res.Output, errs.String())
			}
			if !m.strict { // under strict $! is a pid of the task's namespace; its end is the namespace's
				waitGone(t, readPid(t, filepath.Join(p.Workspace, "holder")), 2*time.Second)
			}

			p, task = m.setup(t, `(sleep 0.2; echo late >&2) >/dev/null & echo early`)
			task.Limits.Grace = jsonx.Duration(time.Minute) // ends when the pipe closes, long before
			errs = &lockedBuf{}
			opt.Stderr = errs
			res = mustRun(t, p, task, opt)
			if res.OutputIncomplete || res.Output != "early\n" || errs.String() != "late\n" {
				t.Errorf("late stderr: incomplete %v output %q stderr %q; want complete, early, late", res.OutputIncomplete, res.Output, errs.String())
			}
		})
	}
}

// Timeout with a separate stderr still ends the whole task.
func TestStderrTimeout(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := policyFor(t, IsolationNone, "sh")
			task := sh(`sleep 1000 & echo $! > gc; echo waiting >&2; wait`)
			task.Limits.Timeout = jsonx.Duration(time.Second)
			errs := &lockedBuf{}
			opt := m.opt
			opt.Stderr = errs
			res := mustRun(t, p, task, opt)
			if res.Status != StatusTimedOut || errs.String() != "waiting\n" {
				t.Errorf("status %s stderr %q; want timed_out, waiting", res.Status, errs.String())
			}
			waitGone(t, readPid(t, filepath.Join(p.Workspace, "gc")), 2*time.Second)
		})
	}
}

// Results with a separate stderr validate against the schema, and the
// default (shared) Result has no stderr fields at all.
func TestStderrResultDocument(t *testing.T) {
	s := schematest.Compile(t, resultSchema)
	p := policyFor(t, IsolationNone, "sh")
	res := mustRun(t, p, sh(`echo out; head -c 100 /dev/zero >&2`), Options{Stderr: &lockedBuf{}, StderrBytes: 10})
	b, err := jsonx.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, s, "Result with stderr", b)
	if !bytes.Contains(b, []byte(`"stderr_bytes":100,"stderr_dropped":90,`)) {
		t.Errorf("Result %s lacks stderr_bytes 100, stderr_dropped 90", b)
	}
	res = mustRun(t, p, sh(`echo out; echo err >&2`), Options{})
	b, _ = jsonx.Marshal(res)
	if res.Output != "out\nerr\n" || bytes.Contains(b, []byte("stderr")) {
		t.Errorf("shared output: %s; want both streams in output and no stderr fields", b)
	}
}

// capped passes a prefix, counts everything, survives a short or failing
// writer.
func TestCapped(t *testing.T) {
	var b bytes.Buffer
	c := &capped{w: &b, limit: 5}
	for _, s := range []string{"ab", "", "cdef", "gh"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all, nil", s, n, err)
		}
	}
	if b.String() != "abcde" || c.total != 8 || c.passed != 5 {
		t.Errorf("passed %q, total %d, passed %d; want abcde, 8, 5", b.String(), c.total, c.passed)
	}
	c = &capped{w: shortWriter{}, limit: 100}
	_, _ = c.Write([]byte("abcdef"))
	_, _ = c.Write([]byte("gh"))
	if c.total != 8 || c.passed != 3 || c.w != nil {
		t.Errorf("short writer: total %d passed %d; want 8, 3 and the writer dropped", c.total, c.passed)
	}
}

// shortWriter accepts half of a write and reports the short write.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, errors.New("short write") }
