package stateindex

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

var bg = context.Background()

// withTail counts comparisons that applied a tail (the test must exercise it).
var withTail int

// fixedNow is the clock of the text tables compared.
var fixedNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// gen drives a random queue through every kind of event, with the reducer
// choosing only legal ones, through the real file backend.
type gen struct {
	t    testing.TB
	rnd  *rand.Rand
	dir  string
	b    *file.Backend
	q    *queue.Queue
	next int
	ids  int // ids given by batch so far
}

func newGen(t testing.TB, seed uint64) *gen {
	g := &gen{t: t, rnd: rand.New(rand.NewPCG(seed, 17)), dir: t.TempDir()}
	g.open()
	return g
}

func (g *gen) open() {
	b, err := file.Open(g.dir, file.Options{})
	if err != nil {
		g.t.Fatal(err)
	}
	g.b, g.q = b, queue.New(b)
}

func (g *gen) close() { g.b.Close() }

var programs = []string{`"true"`, `"make"`, `"ünïcode ☃"`, `"a\"b\\c"`, `42`, ``}

func (g *gen) enqueue() {
	n := 1 + g.rnd.IntN(6)
	var ps []queue.Proposal
	for range n {
		g.next++
		m := `{"apiVersion":"art/v1alpha1","kind":"Task"}`
		if p := programs[g.rnd.IntN(len(programs))]; p != "" {
			m = `{"apiVersion":"art/v1alpha1","kind":"Task","program":` + p + `}`
		}
		ps = append(ps, queue.Proposal{Any: true, Event: &queue.Event{Type: queue.EventEnqueued,
			Task: fmt.Sprintf("t%03d-%c", g.next, 'a'+g.rnd.IntN(26)), MaxAttempts: 1 + g.rnd.IntN(3), Manifest: []byte(m)}})
	}
	if _, err := g.b.Append(bg, ps); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gen) trace() *queue.Trace {
	statuses := []execx.Status{execx.StatusSucceeded, execx.StatusFailed, execx.StatusTimedOut, execx.StatusCancelled, execx.StatusError}
	tr := &queue.Trace{Status: statuses[g.rnd.IntN(len(statuses))], ExitCode: g.rnd.IntN(3), DurationMS: g.rnd.Int64N(100000),
		OutputBytes: g.rnd.Int64N(1 << 20), OutputTruncated: g.rnd.IntN(2) == 0}
	if tr.Status != execx.StatusSucceeded {
		tr.Reason = []string{"exit 1", "timed out after 1s", "killed: ☠"}[g.rnd.IntN(3)]
	}
	if tr.Status == execx.StatusCancelled {
		tr.Signal = "SIGKILL"
	}
	if g.rnd.IntN(4) == 0 {
		v := g.rnd.IntN(2) == 0
		tr.OutputSaved = &v
		if !v {
			tr.OutputError = "disk full"
		}
	}
	if tr.Status == execx.StatusSucceeded && g.rnd.IntN(3) == 0 {
		tr.Acceptance = &queue.Trace{Status: statuses[g.rnd.IntN(2)], ExitCode: 1, DurationMS: 5, Reason: "tests failed"}
	}
	return tr
}

// step appends one legal event (or a batch of a few) for random tasks.
func (g *gen) step() {
	var ps []queue.Proposal
	g.q.View(bg, func(st *queue.State) error {
		var all []*queue.Task
		st.Tasks(func(t *queue.Task) bool { all = append(all, t); return true })
		if len(all) == 0 {
			return nil
		}
		seen := map[string]bool{}
		for range 1 + g.rnd.IntN(3) {
			t := all[g.rnd.IntN(len(all))]
			if seen[t.ID] {
				continue
			}
			types := []queue.EventType{queue.EventStarted, queue.EventTrace, queue.EventSucceeded, queue.EventFailed,
				queue.EventCancelRequested, queue.EventCancelled, queue.EventRequeued, queue.EventRetried}
			for range 8 {
				ev := &queue.Event{Type: types[g.rnd.IntN(len(types))], Task: t.ID, Attempt: t.Attempt}
				switch ev.Type {
				case queue.EventStarted:
					ev.Worker = fmt.Sprintf("w%d", g.rnd.IntN(3))
				case queue.EventTrace:
					ev.Trace = g.trace()
				case queue.EventRequeued:
					ev.Worker, ev.Reason = t.Worker, "worker gone"
				case queue.EventRetried:
					ev.Attempt = t.Attempt + 1
				}
				if t.State == queue.StateRunning && ev.Type != queue.EventStarted {
					ev.Claim = t.Claim
				}
				if st.Check(ev) == nil {
					seen[t.ID] = true
					ps = append(ps, queue.Proposal{Event: ev, Expect: t.LastSeq})
					break
				}
			}
		}
		return nil
	})
	if len(ps) == 0 {
		return
	}
	if _, err := g.b.Append(bg, ps); err != nil {
		g.t.Fatal(err)
	}
}

// writeIndex writes the index of the writer's state; it reports whether
// there is one (an empty queue has none).
func (g *gen) writeIndex() bool {
	if err := WriteQueue(bg, g.q); err != nil {
		g.t.Fatal(err)
	}
	return g.q.Seq() > 0
}

func (g *gen) compact() {
	if _, err := g.q.Compact(bg); err != nil {
		g.t.Fatal(err)
	}
}

// tear leaves what a crash mid-append leaves: a fragment without newline
// (or a batch without its commit). The next writer cuts it.
func (g *gen) tear() {
	f, err := os.OpenFile(filepath.Join(g.dir, file.LogName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	f.WriteString(`{"seq":99999,"time":"2026-`)
	f.Close()
}

// replayed is the state a plain replay gives: what status shows today.
func replayed(t testing.TB, dir string) *queue.State {
	t.Helper()
	rb, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	q, err := queue.Inspect(bg, rb)
	if err != nil {
		t.Fatal(err)
	}
	var st *queue.State
	q.View(bg, func(s *queue.State) error { st = s; return nil })
	return st
}

// outputs renders what status prints for every view: the summary, each
// task (and a missing one), and the lists, all states and each one, as
// JSON Lines and as the text table.
type outputs map[string]string

func replayOutputs(st *queue.State) outputs {
	out := outputs{}
	s := queue.SummaryOf(st)
	out["summary"] = render(&s)
	var all []*queue.Task
	st.Tasks(func(t *queue.Task) bool { all = append(all, t); return true })
	for _, t := range all {
		ts := queue.StatusOf(t)
		out["task "+t.ID] = render(&ts)
	}
	for _, f := range append([]queue.TaskState{""}, queue.States...) {
		var list []queue.TaskStatus
		for _, t := range all {
			if f == "" || t.State == f {
				list = append(list, queue.StatusOf(t))
			}
		}
		out["list "+string(f)] = renderList(list)
	}
	return out
}

func indexOutputs(v *View, ids []string) (outputs, error) {
	out := outputs{}
	s := v.Summary()
	out["summary"] = render(&s)
	for _, id := range ids {
		task, program, err := v.Task(id)
		if err != nil {
			return nil, fmt.Errorf("Task(%s): %w", id, err)
		}
		if task == nil {
			continue
		}
		ts := queue.StatusWith(task, program)
		out["task "+id] = render(&ts)
	}
	for _, f := range append([]queue.TaskState{""}, queue.States...) {
		var list []queue.TaskStatus
		if err := v.Tasks(f, func(task *queue.Task, program string) error {
			list = append(list, queue.StatusWith(task, program))
			return nil
		}); err != nil {
			return nil, fmt.Errorf("Tasks(%q): %w", f, err)
		}
		out["list "+string(f)] = renderList(list)
	}
	return out, nil
}

func render(v any) string {
	b, err := jsonx.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func renderList(list []queue.TaskStatus) string {
	var buf bytes.Buffer
	for i := range list {
		buf.WriteString(render(&list[i]) + "\n")
	}
	queue.WriteTable(&buf, list, fixedNow)
	return buf.String()
}

// Whether an index must be used by a comparison.
type expect int

const (
	refused expect = iota // Load must fail
	used                  // Load must succeed and match the replay
	either                // a damaged file: refused, or failing where status would replay, or matching
	forgery               // either, or else fsck reports the difference
)

// compare checks that status from the index plus the tail prints what the
// replay prints.
func compare(t *testing.T, dir string, want bool, when string) {
	t.Helper()
	e := refused
	if want {
		e = used
	}
	compareAs(t, dir, e, when)
}

func compareAs(t *testing.T, dir string, want expect, when string) {
	t.Helper()
	st := replayed(t, dir)
	v, err := Load(bg, dir)
	if err != nil {
		if want == used {
			t.Fatalf("%s: Load: %v", when, err)
		}
		return
	}
	defer v.Close()
	if want == refused {
		t.Fatalf("%s: Load used an index it should have refused", when)
	}
	if v.TailEvents > 0 {
		withTail++
	}
	var ids []string
	st.Tasks(func(task *queue.Task) bool { ids = append(ids, task.ID); return true })
	got, err := indexOutputs(v, append(ids, "missing"))
	if err != nil {
		if want == used {
			t.Fatalf("%s: %v", when, err)
		}
		return
	}
	exp := replayOutputs(st)
	if task, _, _ := v.Task("missing"); task != nil {
		t.Fatalf("%s: a missing task found", when)
	}
	for k, w := range exp {
		g, ok := got[k]
		if !ok && want != used && strings.HasPrefix(k, "task ") {
			continue // not found from the index: status confirms by replaying
		}
		if g != w {
			if want == forgery {
				if _, err := Check(bg, dir, st); err == nil {
					t.Fatalf("%s: status differs from the replay and fsck does not say so:\n%s:\nindex:  %s\nreplay: %s", when, k, g, w)
				}
				return
			}
			t.Fatalf("%s: %s:\nindex:  %s\nreplay: %s", when, k, g, w)
		}
	}
	if len(got) > len(exp) {
		t.Fatalf("%s: %d outputs, want %d", when, len(got), len(exp))
	}
	if _, err := Check(bg, dir, st); err != nil && want == used {
		t.Fatalf("%s: Check: %v", when, err)
	}
}

// TestMatchesReplay: over random queues (batches, every transition,
// retries, cancels, requeues as recovery makes them, compactions, torn
// tails cut by the next writer), status from the index and the tail after
// it prints exactly what a replay prints, and an index a compaction
// outdated is never used.
func TestMatchesReplay(t *testing.T) {
	withTail = 0
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := newGen(t, seed)
			defer func() { g.close() }()
			usable := false
			for i := range 60 {
				switch r := g.rnd.IntN(20); {
				case r < 4:
					g.enqueue()
				case r < 15:
					g.step()
				case r < 16:
					usable = g.writeIndex()
				case r < 17: // as a worker or a batch enqueue refreshes it
					if err := Refresh(bg, g.b, 1); err != nil {
						t.Fatal(err)
					}
					usable = replayed(t, g.dir).Seq > 0
				case r < 18:
					g.compact()
					usable = false
				case r < 19:
					g.tear()
					compare(t, g.dir, usable, fmt.Sprintf("step %d (torn tail)", i))
					g.close()
					g.open() // cuts the tail and records a truncated event
				default:
					g.compact()
					usable = g.writeIndex()
				}
				compare(t, g.dir, usable, fmt.Sprintf("step %d", i))
			}
		})
	}
	if withTail < seeds*5 {
		t.Fatalf("only %d comparisons applied a tail", withTail)
	}
}
