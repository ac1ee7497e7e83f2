package queue

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

var manifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)

// ev builds an event; seq is filled by apply.
func ev(typ EventType, task string, attempt int) *Event {
	e := &Event{Time: t0, Type: typ, Task: task, Attempt: attempt}
	switch typ {
	case EventEnqueued:
		e.MaxAttempts, e.Manifest = 2, manifest
	case EventStarted:
		e.Worker = "w1"
	}
	return e
}

func traced(task string, attempt int, status execx.Status) *Event {
	e := ev(EventTrace, task, attempt)
	e.Trace = &Trace{Status: status}
	return e
}

func accepted(task string, attempt int, status, acceptance execx.Status) *Event {
	e := traced(task, attempt, status)
	e.Trace.Acceptance = &Trace{Status: acceptance}
	return e
}

func withRun(e *Event) *Event {
	e.Run = []byte(`{"workspace":"copy"}`)
	return e
}

func TestReducerLifecycles(t *testing.T) {
	cases := []struct {
		name   string
		events []*Event
		state  TaskState
		att    int // Attempt
		atts   int // Attempts
		errAt  int // index of the first refused event, -1 for none
	}{
		{"success", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusSucceeded), ev(EventSucceeded, "a", 1)}, StateSucceeded, 1, 1, -1},
		{"timeout fails", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusTimedOut), ev(EventFailed, "a", 1)}, StateFailed, 1, 1, -1},
		{"retry then success", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventFailed, "a", 1), ev(EventRetried, "a", 2), ev(EventStarted, "a", 2), traced("a", 2, execx.StatusSucceeded), ev(EventSucceeded, "a", 2)}, StateSucceeded, 2, 2, -1},
		{"retry exhausted", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventFailed, "a", 1), ev(EventRetried, "a", 2), ev(EventStarted, "a", 2), traced("a", 2, execx.StatusFailed), ev(EventFailed, "a", 2), ev(EventRetried, "a", 3)}, StateFailed, 2, 2, 8},
		{"requeue keeps the attempt", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventRequeued, "a", 1), ev(EventStarted, "a", 1)}, StateRunning, 1, 1, -1},
		{"traced attempt never requeued", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusSucceeded), ev(EventRequeued, "a", 1)}, StateRunning, 1, 1, 3},
		{"terminal without trace", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventSucceeded, "a", 1)}, StateRunning, 1, 1, 2},
		{"terminal disagrees with trace", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventSucceeded, "a", 1)}, StateRunning, 1, 1, 3},
		{"cancel queued", []*Event{ev(EventEnqueued, "a", 0), ev(EventCancelled, "a", 1)}, StateCancelled, 1, 0, -1},
		{"cancel running needs request", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventCancelled, "a", 1)}, StateRunning, 1, 1, 2},
		{"cancel requested then cancelled", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventCancelRequested, "a", 1), ev(EventCancelled, "a", 1)}, StateCancelled, 1, 1, -1},
		{"cancel requested but it succeeded", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventCancelRequested, "a", 1), traced("a", 1, execx.StatusSucceeded), ev(EventSucceeded, "a", 1)}, StateSucceeded, 1, 1, -1},
		{"cancel requested is not requeued", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), ev(EventCancelRequested, "a", 1), ev(EventRequeued, "a", 1)}, StateRunning, 1, 1, 3},
		{"terminal refuses cancel", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusSucceeded), ev(EventSucceeded, "a", 1), ev(EventCancelled, "a", 1)}, StateSucceeded, 1, 1, 4},
		{"terminal refuses completion", []*Event{ev(EventEnqueued, "a", 0), ev(EventCancelled, "a", 1), ev(EventSucceeded, "a", 1)}, StateCancelled, 1, 0, 2},
		{"duplicate enqueue", []*Event{ev(EventEnqueued, "a", 0), ev(EventEnqueued, "a", 0)}, StateQueued, 1, 0, 1},
		{"wrong attempt", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 2)}, StateQueued, 1, 0, 1},
		{"second trace", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), traced("a", 1, execx.StatusFailed)}, StateRunning, 1, 1, 3},
		{"unknown task", []*Event{ev(EventStarted, "zz", 1)}, "", 0, 0, 0},
		{"acceptance passes", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), accepted("a", 1, execx.StatusSucceeded, execx.StatusSucceeded), ev(EventSucceeded, "a", 1)}, StateSucceeded, 1, 1, -1},
		{"acceptance failure fails the task", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), accepted("a", 1, execx.StatusSucceeded, execx.StatusFailed), ev(EventSucceeded, "a", 1)}, StateRunning, 1, 1, 3},
		{"acceptance failure then failed", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), accepted("a", 1, execx.StatusSucceeded, execx.StatusTimedOut), ev(EventFailed, "a", 1)}, StateFailed, 1, 1, -1},
		{"acceptance cancelled", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), accepted("a", 1, execx.StatusSucceeded, execx.StatusCancelled), ev(EventCancelled, "a", 1)}, StateCancelled, 1, 1, -1},
		{"acceptance only after success", []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), accepted("a", 1, execx.StatusFailed, execx.StatusSucceeded)}, StateRunning, 1, 1, 2},
		{"run spec only when enqueued", []*Event{ev(EventEnqueued, "a", 0), withRun(ev(EventStarted, "a", 1))}, StateQueued, 1, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewState()
			errAt := -1
			for i, e := range c.events {
				e.Seq = s.Seq + 1
				if err := s.Apply(e); err != nil {
					if errAt < 0 {
						errAt = i
					}
					var te *TransitionError
					if !errors.As(err, &te) || exitcode.Of(err) != exitcode.Conflict {
						t.Errorf("event %d: error %v is not a conflict TransitionError", i, err)
					}
					break
				}
			}
			if errAt != c.errAt {
				t.Errorf("first refused event = %d; want %d", errAt, c.errAt)
			}
			task := s.Task("a")
			if c.state == "" {
				if task != nil {
					t.Errorf("task exists")
				}
				return
			}
			if task.State != c.state || task.Attempt != c.att || task.Attempts != c.atts {
				t.Errorf("task = %s attempt %d attempts %d; want %s %d %d", task.State, task.Attempt, task.Attempts, c.state, c.att, c.atts)
			}
			checkInvariants(t, s)
		})
	}
}

func TestQueuedOrder(t *testing.T) {
	s := NewState()
	apply := func(e *Event) {
		t.Helper()
		e.Seq = s.Seq + 1
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		apply(ev(EventEnqueued, id, 0))
	}
	apply(ev(EventStarted, "a", 1))
	apply(ev(EventStarted, "b", 1))
	apply(ev(EventRequeued, "a", 1)) // a keeps its place at the front
	got := ids(s.Queued(10))
	if got != "a c d" {
		t.Errorf("Queued = %s; want a c d", got)
	}
	if got := ids(s.Queued(2)); got != "a c" {
		t.Errorf("Queued(2) = %s; want a c", got)
	}
	if c := s.Counts(); c[StateQueued] != 3 || c[StateRunning] != 1 {
		t.Errorf("Counts = %v", c)
	}
}

// TestQueuedMatchesSort checks Queued(k) against sorting every queued task,
// over a queue churned by starts, requeues and cancels.
func TestQueuedMatchesSort(t *testing.T) {
	s := NewState()
	apply := func(e *Event) {
		t.Helper()
		e.Seq = s.Seq + 1
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		apply(ev(EventEnqueued, fmt.Sprint("t", i), 0))
	}
	for range 2000 {
		id := fmt.Sprint("t", rng.IntN(300))
		task := s.Task(id)
		switch {
		case task.State == StateQueued && rng.IntN(2) == 0:
			apply(ev(EventStarted, id, 1))
		case task.State == StateRunning:
			apply(ev(EventRequeued, id, 1))
		case task.State == StateQueued && rng.IntN(50) == 0:
			apply(ev(EventCancelled, id, 1))
		}
		var all []*Task
		for _, x := range s.order {
			if x.State == StateQueued {
				all = append(all, x)
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].EnqSeq < all[j].EnqSeq })
		for _, k := range []int{1, 2, 7, 1000} {
			want := all[:min(k, len(all))]
			if got := s.Queued(k); ids(got) != ids(want) {
				t.Fatalf("Queued(%d) = %s; want %s", k, ids(got), ids(want))
			}
		}
	}
}

func ids(ts []*Task) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return strings.Join(out, " ")
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := NewState()
	for _, e := range []*Event{
		ev(EventEnqueued, "a", 0), ev(EventEnqueued, "b", 0), ev(EventEnqueued, "c", 0),
		ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventFailed, "a", 1), ev(EventRetried, "a", 2),
		ev(EventStarted, "b", 1), ev(EventCancelRequested, "b", 1),
	} {
		e.Seq = s.Seq + 1
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	data := EncodeSnapshot(s.Snapshot(t0))
	snap, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewStateFrom(snap)
	if err != nil {
		t.Fatal(err)
	}
	if again := EncodeSnapshot(s2.Snapshot(t0)); !bytes.Equal(again, data) {
		t.Errorf("snapshot round trip differs:\n%s\n%s", data, again)
	}
	checkInvariants(t, s2)
	// Damage anywhere is caught by the trailer's checksum.
	bad := bytes.Replace(data, []byte(`"b"`), []byte(`"B"`), 1)
	if _, err := DecodeSnapshot(bad); err == nil {
		t.Error("a damaged snapshot decoded")
	}
	if _, err := DecodeSnapshot(data[:len(data)-5]); err == nil {
		t.Error("a truncated snapshot decoded")
	}
}

// checkInvariants verifies what every reachable state satisfies.
func checkInvariants(t testing.TB, s *State) {
	t.Helper()
	var counts [5]int
	queued := 0
	for _, task := range s.order {
		if s.tasks[task.ID] != task {
			t.Fatalf("task %s: order and map disagree", task.ID)
		}
		counts[stateIndex(task.State)]++
		if task.Attempt < 1 || task.Attempt > task.MaxAttempts {
			t.Fatalf("task %s: attempt %d of %d", task.ID, task.Attempt, task.MaxAttempts)
		}
		if task.Attempts < 0 || task.Attempts > task.Attempt {
			t.Fatalf("task %s: attempts %d > attempt %d", task.ID, task.Attempts, task.Attempt)
		}
		_, running := s.running[task.ID]
		if running != (task.State == StateRunning) || (task.State == StateRunning) != (task.Worker != "") {
			t.Fatalf("task %s: running set, state %s and worker %q disagree", task.ID, task.State, task.Worker)
		}
		if task.State == StateQueued {
			queued++
			if task.hidx < 0 || task.hidx >= len(s.queued) || s.queued[task.hidx] != task {
				t.Fatalf("task %s: queued but not in the heap at its index", task.ID)
			}
			if task.Trace != nil {
				t.Fatalf("task %s: queued with a trace for its attempt", task.ID)
			}
		} else if task.hidx != -1 {
			t.Fatalf("task %s: %s but has heap index %d", task.ID, task.State, task.hidx)
		}
		if (task.State == StateSucceeded || task.State == StateFailed) && (task.Trace == nil || task.Trace.Outcome() != EventType(task.State)) {
			t.Fatalf("task %s: %s without a matching trace", task.ID, task.State)
		}
		if task.CancelRequested && task.State != StateRunning {
			t.Fatalf("task %s: cancel requested while %s", task.ID, task.State)
		}
	}
	if queued != len(s.queued) || counts != s.counts || len(s.running) != counts[1] {
		t.Fatalf("counts %v (heap %d, running %d); recount %v (queued %d)", s.counts, len(s.queued), len(s.running), counts, queued)
	}
}

// legal is the transition table written out independently of Check: every
// (from, event, to) the reducer may produce. "" is "no task".
var legal = map[string]bool{
	" enqueued queued":                 true,
	"queued started running":           true,
	"queued cancelled cancelled":       true,
	"running trace running":            true,
	"running cancel_requested running": true,
	"running succeeded succeeded":      true,
	"running failed failed":            true,
	"running cancelled cancelled":      true,
	"running requeued queued":          true,
	"failed retried queued":            true,
}

// FuzzReducer applies arbitrary event sequences: the reducer never panics,
// a refused event changes nothing, an accepted one is a legal transition,
// and every state reached keeps the invariants and survives a snapshot.
func FuzzReducer(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 1, 2, 0, 1, 3, 0, 1})
	f.Add([]byte{0, 1, 0, 1, 1, 1, 2, 1, 1, 4, 1, 1, 8, 1, 2, 1, 1, 2})
	f.Add([]byte{0, 2, 0, 1, 2, 1, 5, 2, 1, 6, 2, 1, 7, 2, 1})
	statuses := execx.Statuses
	f.Fuzz(func(t *testing.T, prog []byte) {
		s := NewState()
		for i := 0; i+2 < len(prog) && i < 3*200; i += 3 {
			op, tk, arg := prog[i], prog[i+1], prog[i+2]
			e := &Event{
				Seq:     s.Seq + 1 + uint64(arg>>7),
				Time:    t0,
				Type:    EventTypes[int(op)%len(EventTypes)],
				Task:    fmt.Sprintf("t%d", tk%3),
				Attempt: int(arg&7) - 1,
			}
			if op&0x80 != 0 {
				e.Task = ""
			}
			switch e.Type {
			case EventEnqueued:
				e.MaxAttempts = int(arg>>3) & 3
				if arg&0x40 == 0 {
					e.Manifest = manifest
				}
				if arg&0x04 != 0 {
					e.Run = []byte(`{"acceptance":["true"]}`)
				}
			case EventStarted:
				if arg&0x40 == 0 {
					e.Worker = "w"
				}
			case EventTrace:
				if arg&0x40 == 0 {
					e.Trace = &Trace{Status: statuses[int(arg>>3)%len(statuses)]}
					if arg&0x04 != 0 {
						e.Trace.Acceptance = &Trace{Status: statuses[int(arg)%len(statuses)]}
					}
				}
			}
			before := EncodeSnapshot(s.Snapshot(t0))
			var from TaskState
			if task := s.Task(e.Task); task != nil {
				from = task.State
			}
			err := s.Apply(e)
			if err != nil {
				if after := EncodeSnapshot(s.Snapshot(t0)); !bytes.Equal(before, after) {
					t.Fatalf("refused %s %s changed the state: %v", e.Type, e.Task, err)
				}
				continue
			}
			if !e.Type.logLevel() {
				to := s.Task(e.Task).State
				if key := fmt.Sprintf("%s %s %s", from, e.Type, to); !legal[key] {
					t.Fatalf("illegal transition accepted: %s", key)
				}
			}
			checkInvariants(t, s)
		}
		snap, err := DecodeSnapshot(EncodeSnapshot(s.Snapshot(t0)))
		if err != nil {
			t.Fatalf("snapshot of a reachable state does not decode: %v", err)
		}
		if _, err := NewStateFrom(snap); err != nil {
			t.Fatalf("snapshot of a reachable state is refused: %v", err)
		}
	})
}

// FuzzDecodeSnapshot: any input either fails cleanly or decodes to a
// snapshot that NewStateFrom accepts or refuses without panicking; an
// accepted one encodes and decodes to the same bytes.
func FuzzDecodeSnapshot(f *testing.F) {
	s := NewState()
	for _, e := range []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventEnqueued, "b", 0)} {
		e.Seq = s.Seq + 1
		if err := s.Apply(e); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(EncodeSnapshot(s.Snapshot(t0)))
	f.Add(EncodeSnapshot(NewState().Snapshot(t0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := DecodeSnapshot(data)
		if err != nil {
			// Sign the input's lines with a fresh trailer, so the fuzzer
			// also reaches the header and task decoders behind the checksum.
			if snap, err = DecodeSnapshot(resign(data)); err != nil {
				return
			}
		}
		st, err := NewStateFrom(snap)
		if err != nil {
			return
		}
		checkInvariants(t, st)
		enc := EncodeSnapshot(st.Snapshot(snap.Time))
		snap2, err := DecodeSnapshot(enc)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if again := EncodeSnapshot(snap2); !bytes.Equal(again, enc) {
			t.Fatalf("unstable snapshot encoding")
		}
	})
}

// resign replaces a snapshot's trailer with one that matches its lines.
func resign(data []byte) []byte {
	body := data
	if i := bytes.LastIndex(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")); i >= 0 {
		body = data[:i+1]
	} else if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(append([]byte{}, body...), '\n')
	}
	n := bytes.Count(body, []byte("\n")) - 1
	sum := crc32.Checksum(body, castagnoli)
	return fmt.Appendf(append([]byte{}, body...), "{\"end\":%d,\"crc\":%d}\n", n, sum)
}

// TestReducerFencesClaims: an event about a running attempt is refused
// unless it names the task's current claim (the started event's seq),
// even when worker and attempt match, as they do after a requeue and a new
// start by the same worker.
func TestReducerFencesClaims(t *testing.T) {
	st := NewState()
	seq := uint64(0)
	apply := func(e *Event) error {
		seq++
		e.Seq = seq
		if err := st.Apply(e); err != nil {
			seq--
			return err
		}
		return nil
	}
	must := func(e *Event) {
		t.Helper()
		if err := apply(e); err != nil {
			t.Fatal(err)
		}
	}
	withClaim := func(e *Event, c uint64) *Event { e.Claim = c; return e }
	must(ev(EventEnqueued, "x", 0))
	must(ev(EventStarted, "x", 1)) // claim 2
	if c := st.Task("x").Claim; c != 2 {
		t.Fatalf("claim = %d; want 2", c)
	}
	must(withClaim(ev(EventRequeued, "x", 1), 2))
	must(ev(EventStarted, "x", 1)) // claim 4, same worker, same attempt
	for _, e := range []*Event{
		withClaim(traced("x", 1, execx.StatusSucceeded), 2),
		withClaim(ev(EventCancelRequested, "x", 1), 2),
		withClaim(ev(EventRequeued, "x", 1), 2),
	} {
		var te *TransitionError
		if err := apply(e); !errors.As(err, &te) || !strings.Contains(err.Error(), "claim 2 is not the current claim 4") {
			t.Errorf("%s with the old claim = %v; want refused", e.Type, err)
		}
	}
	must(withClaim(traced("x", 1, execx.StatusSucceeded), 4))
	must(withClaim(ev(EventSucceeded, "x", 1), 4))
	if err := apply(withClaim(ev(EventRetried, "x", 2), 4)); err == nil {
		t.Error("a claim on an event about no running attempt was accepted")
	}
	// A snapshot keeps the claim of a running task.
	must(ev(EventEnqueued, "y", 0))
	must(ev(EventStarted, "y", 1))
	back, err := NewStateFrom(decodeSnap(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Task("y").Claim; c != seq {
		t.Errorf("claim after a snapshot = %d; want %d", c, seq)
	}
}

func decodeSnap(t *testing.T, st *State) *Snapshot {
	t.Helper()
	snap, err := DecodeSnapshot(EncodeSnapshot(st.Snapshot(t0)))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
