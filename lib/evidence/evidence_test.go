package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/evidence/evidencetest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	code := m.Run()
	if fixture.home != "" {
		os.RemoveAll(fixture.home)
	}
	if code == 0 {
		// The fixture ran a worker: none of its goroutines may outlive it.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// fixture is one queue with a task in each state, built once per test
// binary (a real worker runs real processes to build it).
var fixture struct {
	home, queueDir string
}

func queueFixture(t *testing.T) (home, dir string) {
	t.Helper()
	if fixture.home == "" {
		home, err := os.MkdirTemp("", "pipeline-test")
		if err != nil {
			t.Fatal(err)
		}
		ws := filepath.Join(home, "ws")
		if err := os.Mkdir(ws, 0o700); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(home, "queues", "default")
		if err := evidencetest.Queue(context.Background(), dir, ws); err != nil {
			t.Fatal(err)
		}
		fixture.home, fixture.queueDir = home, dir
	}
	return fixture.home, fixture.queueDir
}

// snapshotTree records every path, mode and content under dir, so a test
// can prove a reader wrote nothing.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(path + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTask(t *testing.T) {
	home, dir := queueFixture(t)
	before := snapshotTree(t, dir)
	tests := []struct {
		id    string
		state goal.TaskState
		code  int
		msg   string
	}{
		{evidencetest.Succeeded, "succeeded", 0, ""},
		{evidencetest.Failed, "failed", 0, ""},
		{evidencetest.Cancelled, "cancelled", 0, ""},
		// A dead worker's task stays running for a reader: recovering it
		// is a writer's job, and evidence never writes.
		{evidencetest.Running, "running", 0, ""},
		{evidencetest.Queued, "queued", 0, ""},
		{"ghost", "", exitcode.NotFound, "task ghost: not in the queue " + dir},
		{"a.b", "", exitcode.Usage, `task "a.b": not an artq task id`},
	}
	for _, via := range []file.Location{{Home: home}, {Queue: "default", Home: home}, {Dir: dir}} {
		src := &Sources{Queue: via}
		for _, tt := range tests {
			state, qc, err := src.Task(tt.id)
			if tt.code != 0 {
				if exitcode.Of(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("%+v: Task(%s) = %v (exit %d); want exit %d mentioning %q", via, tt.id, err, exitcode.Of(err), tt.code, tt.msg)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%+v: Task(%s): %v", via, tt.id, err)
			}
			if state != tt.state || qc.Dir != dir || qc.Seq < 1 || qc.UpdatedAt.IsZero() || qc.UpdatedAt.Location() != time.UTC {
				t.Errorf("%+v: Task(%s) = %s %+v", via, tt.id, state, qc)
			}
			wantAttempts := 1
			if tt.id == evidencetest.Cancelled || tt.id == evidencetest.Queued {
				wantAttempts = 0
			}
			if qc.Attempts != wantAttempts {
				t.Errorf("Task(%s): %d attempts; want %d", tt.id, qc.Attempts, wantAttempts)
			}
		}
		if err := src.Close(); err != nil {
			t.Error(err)
		}
	}
	if after := snapshotTree(t, dir); after != before {
		t.Errorf("reading the queue changed it:\nbefore\n%s\nafter\n%s", before, after)
	}
}

func TestTaskNoQueue(t *testing.T) {
	home := t.TempDir()
	src := &Sources{Queue: file.Location{Home: home, Queue: "nightly"}}
	_, _, err := src.Task("t1")
	if exitcode.Of(err) != exitcode.NotFound || !strings.Contains(err.Error(), "no queue at "+filepath.Join(home, "queues", "nightly")) {
		t.Errorf("err = %v (exit %d)", err, exitcode.Of(err))
	}
	if _, err := os.Stat(filepath.Join(home, "queues")); !os.IsNotExist(err) {
		t.Errorf("looking for a queue created something: %v", err)
	}
	src = &Sources{Queue: file.Location{Home: home, Queue: "../x"}}
	if _, _, err := src.Task("t1"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("bad queue name: %v", err)
	}
}

// TestTaskSeesNewEvents: one Sources answers from the queue as it is at
// each question, not as it was when first opened.
func TestTaskSeesNewEvents(t *testing.T) {
	_, dir := queueFixture(t)
	copyDir := filepath.Join(t.TempDir(), "q")
	copyTree(t, dir, copyDir)
	src := &Sources{Queue: file.Location{Dir: copyDir}}
	defer src.Close()
	_, qc1, err := src.Task(evidencetest.Succeeded)
	if err != nil {
		t.Fatal(err)
	}
	// Another process cancels the queued task.
	appendCancel(t, copyDir, evidencetest.Queued)
	state, qc2, err := src.Task(evidencetest.Queued)
	if err != nil {
		t.Fatal(err)
	}
	if state != "cancelled" || qc2.Seq != qc1.Seq+1 {
		t.Errorf("after a cancel: %s at seq %d (first read at %d)", state, qc2.Seq, qc1.Seq)
	}
}

func TestEvent(t *testing.T) {
	dir := t.TempDir()
	sink := filepath.Join(dir, "events.jsonl")
	em, err := obs.Open([]string{"jsonl:" + sink}, obs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d1 := em.Emit(ctx, obs.Draft{Subject: "task/built", Type: "task.finished", Attrs: map[string]any{"exit_code": 0}})
	d2 := em.Emit(ctx, obs.Draft{Subject: "task/built", Type: "task.finished", Attrs: map[string]any{"exit_code": 1}})
	if d1.Err != nil || d2.Err != nil {
		t.Fatal(d1.Err, d2.Err)
	}
	em.Close()

	t.Chdir(dir)
	src := &Sources{Sink: "events.jsonl"} // relative: recorded absolute
	sc, err := src.Event(d2.Envelope.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := goal.SinkCheck{Path: sink, Line: 2, Subject: "task/built", Type: "task.finished", Seq: 2, Time: d2.Envelope.Time().UTC()}
	if sc != want {
		t.Errorf("Event = %+v; want %+v", sc, want)
	}

	if _, err := src.Event("sha256:" + strings.Repeat("0", 64)); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("unknown event: %v", err)
	}
	data, _ := os.ReadFile(sink)
	tampered := filepath.Join(dir, "tampered.jsonl")
	if err := os.WriteFile(tampered, bytes.Replace(data, []byte(`"exit_code":1`), []byte(`"exit_code":0`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Sources{Sink: tampered}).Event(d2.Envelope.ID()); exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("tampered record: %v (exit %d); want exit 125 naming line 2", err, exitcode.Of(err))
	}
	_, err = (&Sources{SinkHint: "give --event-sink PATH"}).Event(d1.Envelope.ID())
	var h interface{ Hint() string }
	if exitcode.Of(err) != exitcode.Usage || !asHint(err, &h) || h.Hint() != "give --event-sink PATH" {
		t.Errorf("no sink: %v", err)
	}
}

// TestStoreWithSources is the integration: a goal store whose Sources are
// a real queue and a real sink.
func TestStoreWithSources(t *testing.T) {
	_, dir := queueFixture(t)
	sinkDir := t.TempDir()
	sink := filepath.Join(sinkDir, "e.jsonl")
	em, err := obs.Open([]string{"jsonl:" + sink}, obs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := em.Emit(context.Background(), obs.Draft{Subject: "task/built", Type: "task.finished", Attrs: map[string]any{}})
	em.Close()

	src := &Sources{Queue: file.Location{Dir: dir}, Sink: sink}
	defer src.Close()
	s := goal.NewStore(t.TempDir())
	s.Sources = src
	j, err := goal.New("g", "Ship", nil, []string{"built"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = s.Create(j); err != nil {
		t.Fatal(err)
	}
	j, err = s.Seal("g", j.Revision, "framed", []goal.Evidence{
		{Type: goal.EvidenceTask, Task: evidencetest.Failed},
		{Type: goal.EvidenceEvent, Event: d.Envelope.ID()},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := j.Receipts[goal.PhaseFrame].Evidence
	if evs[0].State != "failed" || evs[0].FromQueue.Dir != dir || evs[1].FromSink.Path != sink {
		t.Errorf("recorded %+v / %+v", evs[0], evs[1].FromSink)
	}
	before, _ := os.ReadFile(s.Path("g"))
	_, err = s.Check("g", j.Revision, "0", goal.Evidence{Type: goal.EvidenceTask, Task: evidencetest.Running})
	if exitcode.Of(err) != exitcode.Conflict || !strings.Contains(err.Error(), "task slow is running in queue "+dir) {
		t.Errorf("running task: %v", err)
	}
	if after, _ := os.ReadFile(s.Path("g")); !bytes.Equal(before, after) {
		t.Error("a refused check changed the journal")
	}
}

func asHint(err error, h *interface{ Hint() string }) bool { return errors.As(err, h) }

// copyTree copies the regular files of a queue directory.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// appendCancel cancels a queued task through lib/queue, as `artq cancel`
// does (no recovery of other tasks).
func appendCancel(t *testing.T, dir, id string) {
	t.Helper()
	b, err := file.Open(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := queue.New(b).Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}
