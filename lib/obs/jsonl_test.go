package obs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/obs/redact"
)

func openJSONL(t testing.TB, path string, o JSONLOptions) *JSONL {
	t.Helper()
	j, err := OpenJSONL(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func emitN(t testing.TB, e *Emitter, subject string, n int) []*Envelope {
	t.Helper()
	var out []*Envelope
	for i := range n {
		d := e.Emit(context.Background(), Draft{Subject: subject, Type: "t", Attrs: map[string]any{"i": i}})
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		out = append(out, d.Envelope)
	}
	return out
}

func verifyClean(t testing.TB, path string) Report {
	t.Helper()
	var findings []string
	rep, err := VerifyFile(path, redact.New(redact.Options{}), func(f Finding) {
		findings = append(findings, fmt.Sprintf("line %d: %s: %s", f.Line, f.Problem, f.Message))
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("verify %s: %v", path, findings)
	}
	return rep
}

func TestJSONLCreatesOwnerOnlyCanonicalRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	j := openJSONL(t, path, JSONLOptions{})
	e := New(Options{}, j)
	envs := emitN(t, e, "s", 3)
	e.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var want []byte
	for _, env := range envs {
		want = env.AppendLine(want)
	}
	if string(b) != string(want) {
		t.Errorf("file =\n%s\nwant\n%s", b, want)
	}
	verifyClean(t, path)
}

func TestJSONLRefusals(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte{}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want error
	}{
		{link, ErrSymlink},
		{dangling, ErrSymlink},
		{fifo, ErrNotRegular},
		{dir, ErrNotRegular},
		{open, ErrPermissions},
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		if err := os.WriteFile(other, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			path string
			want error
		}{other, ErrOwner})
	}
	for _, tt := range tests {
		_, err := OpenJSONL(tt.path, JSONLOptions{})
		if !errors.Is(err, tt.want) || exitcode.Of(err) != exitcode.Refused {
			t.Errorf("OpenJSONL(%s) = %v (exit %d); want %v (exit 126)", filepath.Base(tt.path), err, exitcode.Of(err), tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("a dangling symlink's target was created: %v", err)
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Errorf("symlink target written: %q", b)
	}
	var se *SinkError
	_, err := OpenJSONL(open, JSONLOptions{})
	if !errors.As(err, &se) || !strings.Contains(se.Hint(), "chmod 600") {
		t.Errorf("permission refusal hint = %v", err)
	}
}

func TestJSONLTornTailIsTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	emitN(t, e, "s", 3)
	e.Close()
	good, _ := os.ReadFile(path)
	torn := `{"apiVersion":"art/v1alpha1","attrs":{"i":`
	appendFile(t, path, torn)
	j := openJSONL(t, path, JSONLOptions{})
	if r := j.Recovery(); r.TornBytes != int64(len(torn)) || r.Records != 3 {
		t.Errorf("recovery = %+v; want %d torn bytes, 3 records", r, len(torn))
	}
	if b, _ := os.ReadFile(path); string(b) != string(good) {
		t.Errorf("file after recovery:\n%s", b)
	}
	e = New(Options{}, j)
	if envs := emitN(t, e, "s", 1); envs[0].Seq() != 4 {
		t.Errorf("seq after recovery = %d; want 4", envs[0].Seq())
	}
	e.Close()
	verifyClean(t, path)
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestJSONLCorruptOrForeignTailRefused(t *testing.T) {
	for _, tt := range []struct {
		line string
		want error
	}{
		{"not json at all\n", ErrCorrupt},
		{`{"apiVersion":"art/v9","kind":"Event"}` + "\n", ErrVersion},
		{`{"apiVersion":"art/v1alpha1","attrs":{},"kind":"Event"}` + "\n", ErrCorrupt},
	} {
		path := filepath.Join(t.TempDir(), "e.jsonl")
		e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
		emitN(t, e, "s", 2)
		e.Close()
		appendFile(t, path, tt.line)
		before, _ := os.ReadFile(path)
		_, err := OpenJSONL(path, JSONLOptions{})
		if !errors.Is(err, tt.want) || exitcode.Of(err) != exitcode.Internal {
			t.Errorf("tail %q: OpenJSONL = %v; want %v exit 125", tt.line, err, tt.want)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("refused open changed the file")
		}
	}
}

func TestJSONLIdempotentAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	envs := emitN(t, e, "s", 3)
	e.Close()
	before, _ := os.ReadFile(path)
	j := openJSONL(t, path, JSONLOptions{})
	defer j.Close()
	for _, env := range envs {
		out, err := j.Append(context.Background(), env)
		if err != nil || out != Duplicate {
			t.Errorf("re-append %d = %v, %v; want duplicate", env.Seq(), out, err)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("duplicates were written")
	}
	stale := seal(header{subject: "s", typ: "x", time: "2024-01-01T00:00:00Z"}, 2, []byte(`{}`), redact.Summary{})
	if _, err := j.Append(context.Background(), stale); !errors.Is(err, ErrStale) || exitcode.Of(err) != exitcode.Conflict {
		t.Errorf("stale append = %v; want ErrStale exit 3", err)
	}
	// A new emitter continues the subject's sequence.
	e = New(Options{}, j)
	if got := emitN(t, e, "s", 1)[0].Seq(); got != 4 {
		t.Errorf("seq after reopen = %d; want 4", got)
	}
}

// diskFaults stands in for the file's write and truncate, as a full disk
// would: with short >= 0 each write writes only its first short bytes and
// fails ENOSPC; cut, when set, is the error the cut-off returns.
type diskFaults struct {
	mu    sync.Mutex
	short int
	cut   error
}

func (d *diskFaults) set(short int, cut error) {
	d.mu.Lock()
	d.short, d.cut = short, cut
	d.mu.Unlock()
}

func (d *diskFaults) faults() *fsx.LogFaults {
	return &fsx.LogFaults{
		Write: func(f *os.File, p []byte) (int, error) {
			d.mu.Lock()
			short := d.short
			d.mu.Unlock()
			if short < 0 {
				return f.Write(p)
			}
			if short == 0 {
				return 0, syscall.ENOSPC
			}
			n, err := f.Write(p[:min(short, len(p))])
			if err != nil {
				return n, err
			}
			return n, syscall.ENOSPC
		},
		Truncate: func(f *os.File, size int64) error {
			d.mu.Lock()
			cut := d.cut
			d.mu.Unlock()
			if cut != nil {
				return cut
			}
			return f.Truncate(size)
		},
	}
}

func TestJSONLPartialWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	disk := &diskFaults{short: -1}
	j := openJSONL(t, path, JSONLOptions{faults: disk.faults()})
	e := New(Options{}, j)
	emitN(t, e, "s", 2)

	// Nothing written: the append fails, the sink stays usable.
	disk.set(0, nil)
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err == nil || errors.Is(d.Err, ErrPoisoned) {
		t.Errorf("zero-byte failure = %v; want an error that does not poison", d.Err)
	}
	disk.set(-1, nil)
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err != nil {
		t.Errorf("after a clean failure: %v", d.Err)
	}

	// Half a record: cut off again, so the file is what it was and the
	// sink stays usable.
	before, _ := os.ReadFile(path)
	disk.set(17, nil)
	d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if !errors.Is(d.Err, syscall.ENOSPC) || errors.Is(d.Err, ErrPoisoned) || exitcode.Of(d.Err) != exitcode.Internal {
		t.Fatalf("partial write = %v; want the ENOSPC, exit 125, not poisoned", d.Err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("after a partial write that was cut off the file holds:\n%s\nwant what it held before:\n%s", after, before)
	}
	disk.set(-1, nil)
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err != nil {
		t.Errorf("after a partial write that was cut off: %v", d.Err)
	}

	// Half a record that cannot be cut off: poisoned for good, even once
	// the disk has room again.
	disk.set(17, syscall.EIO)
	d = e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if !errors.Is(d.Err, ErrPoisoned) || exitcode.Of(d.Err) != exitcode.Internal {
		t.Fatalf("partial write that could not be cut off = %v; want ErrPoisoned", d.Err)
	}
	disk.set(-1, nil)
	for range 2 {
		if d := e.Emit(context.Background(), Draft{Subject: "other", Type: "t"}); !errors.Is(d.Err, ErrPoisoned) {
			t.Errorf("append after poison = %v; want ErrPoisoned", d.Err)
		}
	}
	e.Close()
	b, _ := os.ReadFile(path)
	if strings.Count(string(b), "\n") != 4 || strings.HasSuffix(string(b), "\n") {
		t.Errorf("file should hold 4 records and a 17-byte torn tail:\n%s", b)
	}
	// The next opener cuts the torn tail; the file verifies again.
	j2 := openJSONL(t, path, JSONLOptions{})
	if r := j2.Recovery(); r.TornBytes != 17 {
		t.Errorf("recovery = %+v; want 17 torn bytes", r)
	}
	j2.Close()
	// The two events whose writes failed and were cut off are missing:
	// verify says so.
	var problems []string
	if _, err := VerifyFile(path, nil, func(f Finding) { problems = append(problems, f.Problem) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(problems, ",") != "gap,gap" {
		t.Errorf("findings %v; want two gaps (the lost events)", problems)
	}
}

func TestJSONLFailedSyncPoisons(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	j := openJSONL(t, path, JSONLOptions{Sync: true, faults: &fsx.LogFaults{Sync: func(*os.File) error { return syscall.EIO }}})
	e := New(Options{}, j)
	defer e.Close()
	for i := range 2 {
		d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
		if !errors.Is(d.Err, ErrPoisoned) {
			t.Errorf("emit %d after a failed fsync = %v; want ErrPoisoned", i, d.Err)
		}
	}
}

func TestJSONLGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	j := openJSONL(t, path, JSONLOptions{Sync: true})
	e := New(Options{}, j)
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if d := e.Emit(context.Background(), Draft{Subject: fmt.Sprintf("s%d", g%4), Type: "t", Attrs: map[string]any{"i": i}}); d.Err != nil {
					t.Error(d.Err)
				}
			}
		}()
	}
	wg.Wait()
	e.Close()
	n := j.log.Syncs()
	if n == 0 || n > goroutines*each {
		t.Errorf("%d fsyncs for %d records", n, goroutines*each)
	}
	t.Logf("%d records, %d fsyncs (group commit)", goroutines*each, n)
	if rep := verifyClean(t, path); rep.Records != goroutines*each {
		t.Errorf("%d records; want %d", rep.Records, goroutines*each)
	}
}

// TestJSONLConcurrentEmittersOneFile: several emitters in one process, each
// with its own descriptor on the same file, share subjects. flock and the
// catch-up read keep every subject's sequence contiguous.
func TestJSONLConcurrentEmittersOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	var wg sync.WaitGroup
	for w := range 4 {
		e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 40 {
					if d := e.Emit(context.Background(), Draft{Subject: fmt.Sprintf("shared/%d", i%3), Type: "t", Attrs: map[string]any{"w": w, "g": g, "i": i}}); d.Err != nil {
						t.Error(d.Err)
					}
				}
			}()
		}
		defer e.Close()
	}
	wg.Wait()
	if rep := verifyClean(t, path); rep.Records != 4*3*40 || rep.Subjects != 3 {
		t.Errorf("report %+v; want 480 records, 3 subjects", rep)
	}
}

const childEnv = "ART_OBS_TEST_CHILD"

// childMain is a writer process for TestJSONLConcurrentProcesses.
func childMain() int {
	path, id := os.Getenv("ART_OBS_TEST_PATH"), os.Getenv("ART_OBS_TEST_ID")
	n, _ := strconv.Atoi(os.Getenv("ART_OBS_TEST_N"))
	e, err := Open([]string{"jsonl:" + path}, Options{Sync: os.Getenv("ART_OBS_TEST_SYNC") != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	for i := range n {
		for _, s := range []string{"shared/" + strconv.Itoa(i%4), "proc/" + id} {
			if d := e.Emit(context.Background(), Draft{Subject: s, Type: "t", Attrs: map[string]any{"proc": id, "i": i}}); d.Err != nil {
				fmt.Fprintln(os.Stderr, d.Err)
				return 1
			}
		}
	}
	return 0
}

func TestJSONLConcurrentProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	const procs, n = 4, 60
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "ART_OBS_TEST_PATH="+path, "ART_OBS_TEST_ID="+strconv.Itoa(p), "ART_OBS_TEST_N="+strconv.Itoa(n))
		if p%2 == 0 {
			cmd.Env = append(cmd.Env, "ART_OBS_TEST_SYNC=1")
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	rep := verifyClean(t, path)
	if rep.Records != procs*n*2 || rep.Subjects != 4+procs {
		t.Errorf("report %+v; want %d records, %d subjects", rep, procs*n*2, 4+procs)
	}
}

// TestJSONLRecoveryWindow: only the tail is read on open, yet the
// sequence of a recent subject continues.
func TestJSONLRecoveryWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	pad := strings.Repeat("x", 1000)
	for i := range 600 {
		e.Emit(context.Background(), Draft{Subject: "s", Type: "t", Attrs: map[string]any{"i": i, "pad": pad}})
	}
	e.Close()
	j := openJSONL(t, path, JSONLOptions{RecoverBytes: 1}) // raised to the floor
	if r := j.Recovery(); r.Records >= 600 || r.Records < 100 {
		t.Errorf("recovered %d records; want only the window's", r.Records)
	}
	e = New(Options{}, j)
	if got := emitN(t, e, "s", 1)[0].Seq(); got != 601 {
		t.Errorf("seq = %d; want 601", got)
	}
	e.Close()
	verifyClean(t, path)
}

func TestJSONLCatchUpTruncatesOthersTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	a := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	defer a.Close()
	emitN(t, a, "s", 1)
	// Another writer appends a record, then dies mid-way through the next.
	b := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	emitN(t, b, "s", 1)
	b.Close()
	appendFile(t, path, `{"apiVersion":"art/v1al`)
	if got := emitN(t, a, "s", 1)[0].Seq(); got != 3 {
		t.Errorf("seq = %d; want 3 (caught up with the other writer)", got)
	}
	verifyClean(t, path)
}

// TestJSONLLockWaitIsBounded: a process that holds the sink's lock file
// (stopped, stuck) delays an append at most LockWait; the append then fails
// with ErrBusy instead of hanging the observed work. The lock is the
// dedicated PATH.lock, never the data file: a lock on the data file itself
// (an older writer, a reader) does not stop an append.
func TestJSONLLockWaitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	j := openJSONL(t, path, JSONLOptions{LockWait: 50 * time.Millisecond})
	e := New(Options{}, j)
	defer e.Close()
	data, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	if err := unix.Flock(int(data.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err != nil {
		t.Errorf("Emit with the data file flocked = %v; the lock is PATH.lock", d.Err)
	}
	holder, err := os.OpenFile(path+LockSuffix, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if !errors.Is(d.Err, ErrBusy) || time.Since(start) > 5*time.Second {
		t.Errorf("Emit under a held lock = %v after %v; want ErrBusy soon", d.Err, time.Since(start))
	}
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err != nil {
		t.Errorf("Emit after release = %v", d.Err)
	}
}
