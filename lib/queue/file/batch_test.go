package file

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

// batchChild enqueues ARTQ_FILETEST_TASKS tasks with generated ids in one
// batch into the queue at dir, as `artq enqueue --batch` does, and exits 0.
func batchChild(dir string) int {
	n, _ := strconv.Atoi(os.Getenv("ARTQ_FILETEST_TASKS"))
	b, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	task := &execx.Task{Program: "true"}
	reqs := make([]queue.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = queue.EnqueueRequest{Task: task, MaxAttempts: 1}
	}
	if _, err := queue.New(b).Enqueue(ctx, reqs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runBatchChild runs batchChild with failpoint fp and reports whether it
// was killed by SIGKILL. The child is this package's test binary built
// with -tags failpoint: in any other build ARTQ_FAILPOINT does nothing.
func runBatchChild(t *testing.T, dir string, tasks int, fp string) (killed bool) {
	t.Helper()
	cmd := exec.Command(systest.GoTest(t, ".", "failpoint"), "-test.run=^$")
	cmd.Env = append(os.Environ(), "ARTQ_FILETEST_BATCH="+dir, "ARTQ_FILETEST_TASKS="+strconv.Itoa(tasks), "ARTQ_FAILPOINT="+fp, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("batch child: %v\n%s", err, out)
	}
	return false
}

// tasksIn replays the queue at dir read-only and returns its task count.
func tasksIn(t *testing.T, dir string) int {
	t.Helper()
	q, err := queue.Inspect(ctx, open(t, dir, Options{ReadOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	q.View(ctx, func(st *queue.State) error { n = st.Len(); return nil })
	return n
}

// TestBatchKilledAtRandomOffsets: a process enqueueing a large batch is
// SIGKILLed after its write put a random number of bytes of the batch in
// the log (the torn-write failpoint). Readers then see no task of it;
// fsck reports the torn batch; the next writer cuts the whole batch and
// records that it did; nothing of it is ever applied. ART_BATCH_KILLS
// sets the number of kills (default 3) and ART_BATCH_TASKS the batch size
// (default 50,000; scripts/crash-queue.sh runs more kills through artq).
func TestBatchKilledAtRandomOffsets(t *testing.T) {
	kills, tasks := 3, 50000
	if testing.Short() {
		kills, tasks = 1, 5000
	}
	if n, err := strconv.Atoi(os.Getenv("ART_BATCH_KILLS")); err == nil && n > 0 {
		kills = n
	}
	if n, err := strconv.Atoi(os.Getenv("ART_BATCH_TASKS")); err == nil && n > 0 {
		tasks = n
	}
	// The size of the batch's write, from one run that is not killed.
	whole := t.TempDir()
	if runBatchChild(t, whole, 1, "") || runBatchChild(t, whole, tasks, "") {
		t.Fatal("a child without failpoint was killed")
	}
	fi, err := os.Stat(filepath.Join(whole, LogName))
	if err != nil {
		t.Fatal(err)
	}
	oneFi := int64(0)
	{
		d := t.TempDir()
		runBatchChild(t, d, 1, "")
		st, _ := os.Stat(filepath.Join(d, LogName))
		oneFi = st.Size()
	}
	size := fi.Size() - oneFi
	partial := 0
	for k := range kills {
		dir := t.TempDir()
		runBatchChild(t, dir, 1, "") // one task before the batch
		before, _ := os.ReadFile(filepath.Join(dir, LogName))
		off := 1 + rand.Int64N(size-1)
		if !runBatchChild(t, dir, tasks, fmt.Sprintf("torn-write:%d", off)) {
			t.Fatalf("kill %d: the child was not killed at byte %d of %d", k, off, size)
		}
		data, _ := os.ReadFile(filepath.Join(dir, LogName))
		if int64(len(data)) != int64(len(before))+off {
			t.Fatalf("kill %d: log is %d bytes; want %d + %d", k, len(data), len(before), off)
		}
		if n := tasksIn(t, dir); n != 1 {
			partial++
			t.Errorf("kill %d at byte %d of %d: readers see %d tasks; want 1 (the batch not at all)", k, off, size, n)
		}
		rep, err := open(t, dir, Options{ReadOnly: true}).Check(ctx)
		if err != nil || rep.TornTail == nil || rep.TornTail.Offset != int64(len(before)) {
			t.Errorf("kill %d: Check = %+v, %v; want the torn batch from byte %d", k, rep, err, len(before))
		}
		w := open(t, dir, Options{})
		evs := readAll(t, w, 0)
		last := evs[len(evs)-1]
		if last.Type != queue.EventTruncated || last.Offset != int64(len(before)) || last.Bytes != off {
			t.Errorf("kill %d: the writer recorded %+v; want the whole torn batch (%d bytes at %d) cut", k, last, off, len(before))
		}
		w.Close()
		if n := tasksIn(t, dir); n != 1 {
			partial++
			t.Errorf("kill %d: after the cut %d tasks; want 1", k, n)
		}
	}
	t.Logf("%d kills at random byte offsets of a %d-task batch (%d bytes): %d partial batches", kills, tasks, size, partial)
}

// TestTornBatchAtEveryOffset: a batch cut at any byte offset is applied
// not at all by readers and cut whole by the next writer; cut at its end
// it is applied whole.
func TestTornBatchAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	good := logWith(t, dir, 1)
	b := open(t, dir, Options{})
	var ps []queue.Proposal
	for i := range 3 {
		ps = append(ps, enq(fmt.Sprintf("b%d", i)))
	}
	appendAll(t, b, ps...)
	b.Close()
	full, _ := os.ReadFile(filepath.Join(dir, LogName))
	batch := full[len(good):]
	if n := bytes.Count(batch, []byte(`"commit":true`)); n != 1 {
		t.Fatalf("the batch holds %d commits; want 1", n)
	}
	for cut := 1; cut <= len(batch); cut++ {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, LogName), full[:len(good)+cut], 0o600)
		want := 1
		if cut == len(batch) {
			want = 4
		}
		if got := len(readAll(t, open(t, d, Options{ReadOnly: true}), 0)); got != want {
			t.Fatalf("cut at %d of %d: read %d events; want %d", cut, len(batch), got, want)
		}
		w := open(t, d, Options{})
		evs := readAll(t, w, 0)
		if cut < len(batch) && (len(evs) != 2 || evs[1].Type != queue.EventTruncated || evs[1].Bytes != int64(cut)) {
			t.Fatalf("cut at %d: after the writer opened: %s; want the torn batch cut and recorded", cut, seqs(evs))
		}
		w.Close()
	}
}
