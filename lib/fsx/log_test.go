package fsx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("FSX_LOGTEST_APPENDER"); path != "" {
		os.Exit(appenderChild(path))
	}
	goleak.VerifyTestMain(m)
}

func openLog(t testing.TB, path string, o LogOptions) *Log {
	t.Helper()
	l, err := OpenLog(path, o)
	if err != nil {
		t.Fatalf("OpenLog(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// lines reads every line of l from off: complete ones and a final
// fragment (marked with a leading '~').
func lines(t testing.TB, l *Log, off int64) []string {
	t.Helper()
	var out []string
	rd := l.Lines(off, -1)
	for {
		line, _, complete, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !complete {
			out = append(out, "~"+string(line))
			continue
		}
		out = append(out, string(line))
	}
}

// TestLogTornTailTrim: a final line without its newline is reported as a
// fragment at its offset (not a record), Trim cuts exactly it, and the
// next append starts a clean line.
func TestLogTornTailTrim(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
		cut        int64 // offset of the fragment; -1: none
	}{
		{"empty", "", nil, -1},
		{"whole", "a\nbb\n", []string{"a", "bb"}, -1},
		{"torn", "a\nbb\nccc", []string{"a", "bb", "~ccc"}, 5},
		{"only a fragment", "abc", []string{"~abc"}, 0},
		{"empty lines", "\n\nx", []string{"", "", "~x"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			l := openLog(t, path, LogOptions{})
			if got := lines(t, l, 0); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("lines = %q; want %q", got, tt.want)
			}
			if tt.cut < 0 {
				return
			}
			rd := l.Lines(0, -1)
			for {
				_, off, complete, err := rd.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !complete {
					if off != tt.cut {
						t.Fatalf("fragment at %d; want %d", off, tt.cut)
					}
					break
				}
			}
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
			if err := l.Trim(tt.cut); err != nil {
				t.Fatal(err)
			}
			if err := l.Append([]byte("new\n"), tt.cut); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if want := tt.data[:tt.cut] + "new\n"; string(got) != want {
				t.Errorf("after trim and append: %q; want %q", got, want)
			}
		})
	}
}

// TestLogCatchUpFromOffset: a reader continues from the offset where it
// stopped and sees only what was appended since, with limits respected
// and one buffer reused.
func TestLogCatchUpFromOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	w := openLog(t, path, LogOptions{Create: true})
	r := openLog(t, path, LogOptions{ReadOnly: true})
	var off int64
	read := func() []string {
		var got []string
		rd := r.Lines(off, -1)
		for {
			line, _, complete, err := rd.Next()
			if err == io.EOF || !complete {
				break
			}
			got = append(got, string(line))
			off = rd.Offset()
		}
		return got
	}
	var end int64
	app := func(s string) {
		if err := w.Append([]byte(s), end); err != nil {
			t.Fatal(err)
		}
		end += int64(len(s))
	}
	steps := []struct {
		append string
		want   string
	}{
		{"", ""},
		{"one\n", "one"},
		{"two\nthree\n", "two,three"},
		{"", ""},
		{"fo", ""}, // an append in progress is not read
		{"ur\n", "four"},
		{strings.Repeat("x", 200<<10) + "\n", strings.Repeat("x", 200<<10)}, // outgrows the buffer
		{"five\n", "five"},
	}
	for i, s := range steps {
		app(s.append)
		if got := strings.Join(read(), ","); got != s.want {
			t.Fatalf("step %d: read %.40q; want %.40q", i, got, s.want)
		}
	}
	if off != end {
		t.Errorf("reader at %d; file ends at %d", off, end)
	}
	// A limit stops the reader where it says, even mid-line.
	rd := r.Lines(0, 6)
	if line, _, complete, _ := rd.Next(); string(line) != "one" || !complete {
		t.Errorf("first line under limit 6 = %q %v", line, complete)
	}
	if line, _, complete, _ := rd.Next(); string(line) != "tw" || complete {
		t.Errorf("second line under limit 6 = %q %v; want the fragment \"tw\"", line, complete)
	}
}

// TestLogOverlongLine: a line longer than MaxLine ends the reading as an
// overlong fragment where it starts (damage, not a torn tail).
func TestLogOverlongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	data := "ok\n" + strings.Repeat("y", 300<<10) + "\nafter\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, path, LogOptions{ReadOnly: true, MaxLine: 100 << 10})
	rd := l.Lines(0, -1)
	if line, _, _, _ := rd.Next(); string(line) != "ok" {
		t.Fatalf("first = %q", line)
	}
	_, off, complete, err := rd.Next()
	if err != nil || complete || !rd.Overlong() || off != 3 {
		t.Errorf("overlong line: off %d complete %v overlong %v err %v; want a fragment at 3, overlong", off, complete, rd.Overlong(), err)
	}
}

// TestLogLockWaitAndTimeout: the lock is the dedicated lock file, never the
// data file; a held lock makes Lock wait, for at most LockWait, then fail
// with a *LockTimeoutError; TryLock fails at once; a lock released while
// waiting is taken.
func TestLogLockWaitAndTimeout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	a := openLog(t, path, LogOptions{Create: true, LockWait: 60 * time.Millisecond})
	b := openLog(t, path, LogOptions{LockWait: 60 * time.Millisecond})
	if a.LockPath() != path+".lock" {
		t.Errorf("lock path %s", a.LockPath())
	}
	// A flock on the data file itself is not the log's lock.
	data, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	if err := unix.Flock(int(data.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(); err != nil {
		t.Fatalf("Lock with the data file flocked: %v", err)
	}
	if fi, err := os.Stat(a.LockPath()); err != nil || fi.Mode().Perm() != FileMode {
		t.Errorf("lock file: %v, %v", fi, err)
	}
	if err := b.TryLock(); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock of a held lock = %v; want ErrLocked", err)
	}
	start := time.Now()
	err = b.Lock()
	var te *LockTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrLocked) || te.Waited != 60*time.Millisecond {
		t.Fatalf("Lock of a held lock = %v; want a LockTimeoutError after 60ms", err)
	}
	if waited := time.Since(start); waited < 60*time.Millisecond {
		t.Errorf("gave up after %v; want at least the wait", waited)
	}
	// Released while b waits: b gets it.
	b2 := openLog(t, path, LogOptions{LockWait: 10 * time.Second})
	done := make(chan error, 1)
	go func() { done <- b2.Lock() }()
	time.Sleep(20 * time.Millisecond)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	b2.Unlock()
	// Read-only logs never lock (and so never create the lock file).
	ro := openLog(t, filepath.Join(dir, "log"), LogOptions{ReadOnly: true})
	if err := ro.Lock(); err == nil {
		t.Error("a read-only log took the lock")
	}
}

// TestOpenLogRefuses: symlinks, FIFOs (without hanging), directories and a
// missing file without Create are refused; Check sees the descriptor; a
// read-only open creates nothing.
func TestOpenLogRefuses(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	must(t, os.WriteFile(reg, nil, 0o600))
	must(t, os.Symlink(reg, filepath.Join(dir, "link")))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	veto := errors.New("vetoed")
	tests := []struct {
		name string
		o    LogOptions
		want error
	}{
		{"link", LogOptions{Create: true}, ErrSymlink},
		{"fifo", LogOptions{Create: true}, ErrNotRegular},
		{"sub", LogOptions{ReadOnly: true}, ErrNotRegular},
		{"missing", LogOptions{}, os.ErrNotExist},
		{"missing", LogOptions{ReadOnly: true}, os.ErrNotExist},
		{"reg", LogOptions{Check: func(*os.File, *unix.Stat_t) error { return veto }}, veto},
	}
	for _, tt := range tests {
		l, err := OpenLog(filepath.Join(dir, tt.name), tt.o)
		if !errors.Is(err, tt.want) {
			t.Errorf("OpenLog(%s, %+v) = %v; want %v", tt.name, tt.o, err, tt.want)
		}
		if l != nil {
			l.Close()
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused open created the file")
	}
}

// TestLogAppendFaults: a short write is cut off again (the file is what it
// was, the log usable); a short write that cannot be cut off breaks the
// log, and so does a failed sync, for good.
func TestLogAppendFaults(t *testing.T) {
	tests := []struct {
		name       string
		short      int   // bytes a write gets through before ENOSPC; -1: all
		cut        error // the cut-off's error
		syncErr    error
		wantBroken bool
	}{
		{"nothing written", 0, nil, nil, false},
		{"half written, cut off", 3, nil, nil, false},
		{"half written, cut fails", 3, syscall.EIO, nil, true},
		{"sync fails", -1, nil, syscall.EIO, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			must(t, os.WriteFile(path, []byte("first\n"), 0o600))
			armed := false
			l := openLog(t, path, LogOptions{Faults: &LogFaults{
				Write: func(f *os.File, p []byte) (int, error) {
					if !armed || tt.short < 0 {
						return f.Write(p)
					}
					n, _ := f.Write(p[:tt.short])
					return n, syscall.ENOSPC
				},
				Truncate: func(f *os.File, size int64) error {
					if armed && tt.cut != nil {
						return tt.cut
					}
					return f.Truncate(size)
				},
				Sync: func(f *os.File) error {
					if armed && tt.syncErr != nil {
						return tt.syncErr
					}
					return f.Sync()
				},
			}})
			armed = true
			err := l.Append([]byte("second\n"), 6)
			if err == nil {
				err = l.Sync()
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(l.Broken(), ErrLogBroken); got != tt.wantBroken {
				t.Fatalf("broken = %v (%v); want %v", got, err, tt.wantBroken)
			}
			armed = false
			if tt.wantBroken {
				if err := l.Append([]byte("third\n"), 6); !errors.Is(err, ErrLogBroken) {
					t.Errorf("append after breaking = %v", err)
				}
				if err := l.SyncThrough(l.Wrote()); !errors.Is(err, ErrLogBroken) {
					t.Errorf("sync after breaking = %v", err)
				}
				return
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("error %v does not keep its cause", err)
			}
			if got, _ := os.ReadFile(path); string(got) != "first\n" {
				t.Errorf("after a cut-off write the file holds %q", got)
			}
			if err := l.Append([]byte("third\n"), 6); err != nil {
				t.Errorf("append after a clean failure: %v", err)
			}
		})
	}
}

// TestLogSyncThroughShares: concurrent writers waiting on SyncThrough
// share syncs, and each returns only once a sync covering its write ran.
func TestLogSyncThroughShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var mu sync.Mutex
	var synced int // writes covered by the last sync
	written := 0
	l := openLog(t, path, LogOptions{Create: true, Faults: &LogFaults{Sync: func(f *os.File) error {
		mu.Lock()
		n := written
		mu.Unlock()
		time.Sleep(time.Millisecond)
		err := f.Sync()
		mu.Lock()
		synced = max(synced, n)
		mu.Unlock()
		return err
	}}})
	const writers, each = 16, 20
	var wg sync.WaitGroup
	var wmu sync.Mutex // the writers' lock (the Log's owner serialises writes)
	var end int64
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				wmu.Lock()
				if err := l.Append([]byte("r\n"), end); err != nil {
					t.Error(err)
				}
				end += 2
				mu.Lock()
				written++
				mine := written
				mu.Unlock()
				gen := l.Wrote()
				wmu.Unlock()
				if err := l.SyncThrough(gen); err != nil {
					t.Error(err)
				}
				mu.Lock()
				if synced < mine {
					t.Errorf("SyncThrough returned before a sync covered write %d (synced %d)", mine, synced)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n := l.Syncs(); n == 0 || n >= writers*each {
		t.Errorf("%d syncs for %d writes: not shared", n, writers*each)
	}
	t.Logf("%d writes, %d syncs", writers*each, l.Syncs())
}

// TestGroupCommits: concurrent Do calls are committed in batches by one
// leader at a time, each call returns after the commit that covered it,
// and nothing is committed twice or lost.
func TestGroupCommits(t *testing.T) {
	var g Group[int]
	var mu sync.Mutex
	committed := map[int]bool{}
	inCommit := false
	commit := func(batch []int) {
		mu.Lock()
		if inCommit {
			t.Error("two commits at once")
		}
		inCommit = true
		mu.Unlock()
		time.Sleep(200 * time.Microsecond)
		mu.Lock()
		for _, r := range batch {
			if committed[r] {
				t.Errorf("%d committed twice", r)
			}
			committed[r] = true
		}
		inCommit = false
		mu.Unlock()
	}
	const n = 400
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Do(i, commit)
			mu.Lock()
			defer mu.Unlock()
			if !committed[i] {
				t.Errorf("Do(%d) returned before its commit", i)
			}
		}()
	}
	wg.Wait()
	if len(committed) != n {
		t.Errorf("%d committed; want %d", len(committed), n)
	}
	if c := g.Commits(); c == 0 || c >= n {
		t.Errorf("%d commits for %d requests: not grouped", c, n)
	}
	t.Logf("%d requests, %d commits", n, g.Commits())
}

// appenderChild appends records "ID N" to the log at path, each under the
// lock, synced, and prints "N" once it is durable; until killed.
func appenderChild(path string) int {
	id := os.Getenv("FSX_LOGTEST_ID")
	l, err := OpenLog(path, LogOptions{Create: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	for n := 1; ; n++ {
		if err := l.Lock(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rec := []byte(id + " " + strconv.Itoa(n) + " " + strings.Repeat("p", n%97) + "\n")
		end, err := l.Size()
		if err == nil {
			// Cut what a killed appender left (as every writer does).
			if end, err = trimTorn(l, end); err == nil {
				err = l.Append(rec, end)
			}
		}
		if err == nil {
			err = l.Sync()
		}
		if err == nil {
			// Nobody else appends while we hold the lock.
			if size, _ := l.Size(); size != end+int64(len(rec)) {
				err = fmt.Errorf("the log grew from %d to %d under our lock", end+int64(len(rec)), size)
			}
		}
		l.Unlock()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, n)
		out.Flush()
	}
}

// trimTorn cuts a fragment after the last newline of l (size bytes): what
// a killed appender may leave. It reads from the start: a test helper.
func trimTorn(l *Log, size int64) (int64, error) {
	rd := l.Lines(0, size)
	for {
		_, off, complete, err := rd.Next()
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return 0, err
		}
		if !complete {
			return off, l.Trim(off)
		}
	}
}

// TestLogConcurrentProcessesKilled: appender processes share one log
// through the lock file and are SIGKILLed at random moments, again and
// again. Afterwards every line is a whole record of one appender (no
// interleaving), each appender's records are in order without gaps, and
// every record an appender acknowledged (printed after its sync) is there.
func TestLogConcurrentProcessesKilled(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "log")
	acked := map[string]int{}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for range rounds {
		type child struct {
			id  string
			cmd *exec.Cmd
			out *bytes.Buffer
		}
		var kids []child
		for k := range 3 {
			id := fmt.Sprintf("p%d", k)
			cmd := exec.Command(exe, "-test.run=^$")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			cmd.Env = append(os.Environ(), "FSX_LOGTEST_APPENDER="+path, "FSX_LOGTEST_ID="+id)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			kids = append(kids, child{id, cmd, &out})
		}
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
		for _, c := range kids {
			c.cmd.Process.Kill()
		}
		for _, c := range kids {
			c.cmd.Wait()
			if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("appender %s ended on its own (%v): it found a fault", c.id, c.cmd.ProcessState)
			}
			// The last line may itself be cut by the kill.
			for _, f := range strings.Fields(c.out.String()) {
				if n, err := strconv.Atoi(f); err == nil && n > 0 {
					acked[c.id]++
				}
			}
		}
	}
	l := openLog(t, path, LogOptions{})
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	size, _ := l.Size()
	if _, err := trimTorn(l, size); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	// Each round restarts the counters at 1: count per appender and round
	// as runs of 1, 2, 3, ...
	have := map[string]int{}
	next := map[string]int{}
	rd := l.Lines(0, -1)
	for {
		line, off, complete, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil || !complete {
			t.Fatalf("at %d: %q complete=%v err=%v after trimming", off, line, complete, err)
		}
		f := strings.Fields(string(line))
		if len(f) < 2 || len(f) > 3 {
			t.Fatalf("at %d: interleaved or damaged record %q", off, line)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("at %d: %q", off, line)
		}
		if pad := strings.Repeat("p", n%97); (len(f) == 3) != (pad != "") || len(f) == 3 && f[2] != pad {
			t.Fatalf("at %d: record %q is not whole", off, line)
		}
		switch {
		case n == 1:
			next[f[0]] = 2
		case n == next[f[0]]:
			next[f[0]]++
		default:
			t.Fatalf("at %d: %s's record %d follows %d (a gap or a repeat)", off, f[0], n, next[f[0]]-1)
		}
		have[f[0]]++
	}
	for id, n := range acked {
		if have[id] < n {
			t.Errorf("%s: %d records acknowledged, %d in the log", id, n, have[id])
		}
	}
	t.Logf("acknowledged %v, in the log %v", acked, have)
}
