package queue

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/vocab"
)

// TaskState names where a task is in its life (lib/vocab holds the states,
// so that readers such as a goal journal need not link the queue).
type TaskState = vocab.TaskState

// Task states (docs/artq.md): queued → running → succeeded | failed |
// cancelled; failed → queued only by an explicit retry.
const (
	StateQueued    = vocab.StateQueued
	StateRunning   = vocab.StateRunning
	StateSucceeded = vocab.StateSucceeded
	StateFailed    = vocab.StateFailed
	StateCancelled = vocab.StateCancelled
)

// States lists every state, for schemas and parity tests.
var States = vocab.States

// stateIndex is s's slot in the per-state counts, -1 for no state.
func stateIndex(s TaskState) int {
	switch s {
	case StateQueued:
		return 0
	case StateRunning:
		return 1
	case StateSucceeded:
		return 2
	case StateFailed:
		return 3
	case StateCancelled:
		return 4
	}
	return -1
}

// Task is one task as the reducer knows it. Callers outside this package get
// copies (TaskStatus, or Task values from methods that say so); the State
// owns the originals.
type Task struct {
	ID    string
	State TaskState
	// Attempt is the attempt the task is on: the one running, the one that
	// last ran, or the one the next start must carry. A requeue after a crash
	// keeps it (a crash never consumes a retry); a retry increments it.
	Attempt int
	// Attempts is how many attempts have been started (the highest attempt
	// number seen in a started event).
	Attempts    int
	MaxAttempts int
	// Manifest is the canonical Task manifest, as enqueued.
	Manifest json.RawMessage
	// Run is the task's stored RunSpec (nil: shared workspace, no
	// acceptance).
	Run json.RawMessage
	// Worker is the worker running the task (state running only).
	Worker string
	// Claim is the sequence of the started event of the running attempt
	// (state running only; 0 in a snapshot written before claims): the
	// fencing token every later event of the attempt must carry.
	Claim           uint64
	CancelRequested bool
	// Trace is the trace of the current attempt, nil until one is recorded.
	Trace *Trace
	// Last is the most recent trace of any attempt, kept across a retry so
	// status can show how the previous attempt ended.
	Last        *Trace
	LastAttempt int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// EnqSeq orders the queue (oldest first); LastSeq is the sequence of the
	// task's latest event, the optimistic condition of its next append.
	EnqSeq  uint64
	LastSeq uint64

	hidx int // index in State.queued, -1 when not queued
}

// State is the replay of a log: the reducer. It is the only place task state
// is derived from events, for every backend, for replay, recovery, the worker
// and the CLI alike. Apply refuses an illegal transition and leaves the
// state untouched when it does.
type State struct {
	// Seq is the sequence of the last event applied (or of the snapshot).
	Seq     uint64
	tasks   map[string]*Task
	order   []*Task // enqueue order
	queued  taskHeap
	running map[string]*Task
	counts  [5]int
}

// NewState returns an empty state.
func NewState() *State {
	return &State{tasks: map[string]*Task{}, running: map[string]*Task{}}
}

// Task returns the task with id, or nil. The result belongs to the state:
// read it under the same lock that guards Apply.
func (s *State) Task(id string) *Task { return s.tasks[id] }

// Len is the number of tasks.
func (s *State) Len() int { return len(s.order) }

// Tasks calls fn for every task in enqueue order until fn returns false.
func (s *State) Tasks(fn func(*Task) bool) {
	for _, t := range s.order {
		if !fn(t) {
			return
		}
	}
}

// Running calls fn for every running task (in no particular order).
func (s *State) Running(fn func(*Task)) {
	for _, t := range s.running {
		fn(t)
	}
}

// Queued returns up to n queued tasks, oldest enqueue first, in O(n log n)
// whatever the queue's length: the k smallest of a binary heap are found by
// walking it with a small frontier heap, not by copying it.
func (s *State) Queued(n int) []*Task {
	if n <= 0 || len(s.queued) == 0 {
		return nil
	}
	h := s.queued
	out := make([]*Task, 0, min(n, len(h)))
	frontier := []int{0} // heap indexes, itself kept as a min-heap by EnqSeq
	less := func(i, j int) bool { return h[frontier[i]].EnqSeq < h[frontier[j]].EnqSeq }
	for len(out) < n && len(frontier) > 0 {
		// pop the frontier's minimum
		top := frontier[0]
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(frontier) && less(l, m) {
				m = l
			}
			if r := l + 1; r < len(frontier) && less(r, m) {
				m = r
			}
			if m == i {
				break
			}
			frontier[i], frontier[m] = frontier[m], frontier[i]
			i = m
		}
		out = append(out, h[top])
		for _, c := range []int{2*top + 1, 2*top + 2} {
			if c < len(h) {
				frontier = append(frontier, c)
				for i := len(frontier) - 1; i > 0; {
					p := (i - 1) / 2
					if !less(i, p) {
						break
					}
					frontier[i], frontier[p] = frontier[p], frontier[i]
					i = p
				}
			}
		}
	}
	return out
}

// Counts returns how many tasks are in each state.
func (s *State) Counts() map[TaskState]int {
	m := make(map[TaskState]int, len(States))
	for i, st := range States {
		m[st] = s.counts[i]
	}
	return m
}

// TransitionError is an event the state machine refuses. As the answer to a
// request (cancel a finished task) it is a conflict, exit 3; found in a log
// being replayed it means the log is corrupt.
type TransitionError struct {
	Task string
	Type EventType
	From TaskState // "" when the task does not exist
	Why  string
}

func (e *TransitionError) Error() string {
	if e.Task == "" {
		return fmt.Sprintf("%s event: %s", e.Type, e.Why)
	}
	if e.From == "" {
		return fmt.Sprintf("task %s: %s: %s", e.Task, e.Type, e.Why)
	}
	return fmt.Sprintf("task %s is %s: %s: %s", e.Task, e.From, e.Type, e.Why)
}

// ExitCode implements exitcode.Coder: a conflict.
func (e *TransitionError) ExitCode() int { return exitcode.Conflict }

// Check reports whether ev is a legal next event, without applying it.
func (s *State) Check(ev *Event) error {
	_, err := s.check(ev)
	return err
}

// check is Check returning the task the event concerns (nil for enqueued
// and log-level events), so Apply looks it up only once.
func (s *State) check(ev *Event) (*Task, error) {
	if ev.Seq != 0 && ev.Seq <= s.Seq {
		return nil, &TransitionError{Task: ev.Task, Type: ev.Type, Why: fmt.Sprintf("sequence %d is not after %d", ev.Seq, s.Seq)}
	}
	if !ev.Type.known() {
		return nil, &TransitionError{Task: ev.Task, Type: ev.Type, Why: "unknown event type"}
	}
	if ev.Type.logLevel() {
		if ev.Task != "" || ev.Attempt != 0 {
			return nil, &TransitionError{Task: ev.Task, Type: ev.Type, Why: "a log-level event names no task"}
		}
		return nil, nil
	}
	if len(ev.Run) > 0 && ev.Type != EventEnqueued {
		return nil, &TransitionError{Task: ev.Task, Type: ev.Type, Why: "only an enqueued event carries a run spec"}
	}
	t := s.tasks[ev.Task]
	err := s.checkTask(t, ev)
	return t, err
}

func (s *State) checkTask(t *Task, ev *Event) error {
	bad := func(format string, args ...any) error {
		e := &TransitionError{Task: ev.Task, Type: ev.Type, Why: fmt.Sprintf(format, args...)}
		if t != nil {
			e.From = t.State
		}
		return e
	}
	if ev.Task == "" {
		return bad("no task")
	}
	if ev.Type == EventEnqueued {
		switch {
		case t != nil:
			return bad("task already exists")
		case ev.MaxAttempts < 1:
			return bad("max_attempts must be at least 1")
		case len(ev.Manifest) == 0:
			return bad("no manifest")
		case ev.Attempt != 0:
			return bad("an enqueued event carries no attempt")
		}
		return nil
	}
	if t == nil {
		return bad("no such task")
	}
	attempt := func() error {
		if ev.Attempt != t.Attempt {
			return bad("attempt %d is not the current attempt %d", ev.Attempt, t.Attempt)
		}
		// Fencing: an event about a running attempt names the claim it
		// belongs to, and only the current claim may speak. (Claim 0 is
		// a record from before claims were written.)
		if ev.Claim != 0 && t.State == StateRunning && ev.Type != EventStarted && ev.Claim != t.Claim {
			return bad("claim %d is not the current claim %d (a late result of an earlier run of attempt %d)", ev.Claim, t.Claim, t.Attempt)
		}
		if ev.Claim != 0 && (t.State != StateRunning || ev.Type == EventStarted) {
			return bad("only an event about a running attempt names a claim")
		}
		return nil
	}
	switch ev.Type {
	case EventStarted:
		if t.State != StateQueued {
			return bad("only a queued task can start")
		}
		if ev.Worker == "" {
			return bad("no worker")
		}
		return attempt()
	case EventTrace:
		if t.State != StateRunning {
			return bad("only a running task has a trace")
		}
		if t.Trace != nil {
			return bad("attempt %d already has a trace", t.Attempt)
		}
		if ev.Trace == nil || ev.Trace.Outcome() == "" {
			return bad("missing or unknown trace status")
		}
		if ev.Trace.Acceptance != nil && ev.Trace.Status != execx.StatusSucceeded {
			return bad("an acceptance runs only after the command succeeded, not %s", ev.Trace.Status)
		}
		return attempt()
	case EventSucceeded, EventFailed:
		if t.State != StateRunning {
			return bad("only a running task can complete")
		}
		if err := attempt(); err != nil {
			return err
		}
		if t.Trace == nil {
			return bad("no trace for attempt %d (the trace is appended before the terminal event)", t.Attempt)
		}
		if got := t.Trace.Outcome(); got != ev.Type {
			return bad("the trace of attempt %d says %s", t.Attempt, got)
		}
		return nil
	case EventCancelRequested:
		if t.State != StateRunning {
			return bad("only a running task takes a cancel request")
		}
		if t.CancelRequested {
			return bad("cancel already requested")
		}
		return attempt()
	case EventCancelled:
		switch t.State {
		case StateQueued:
			return attempt()
		case StateRunning:
			if err := attempt(); err != nil {
				return err
			}
			// Cancelled either because a cancel was requested (with or
			// without a trace), or because the attempt's trace says so.
			if t.Trace != nil {
				if got := t.Trace.Outcome(); got != EventCancelled {
					return bad("the trace of attempt %d says %s", t.Attempt, got)
				}
				return nil
			}
			if !t.CancelRequested {
				return bad("a running task is cancelled only after a cancel request")
			}
			return nil
		}
		return bad("a %s task cannot be cancelled", t.State)
	case EventRequeued:
		if t.State != StateRunning {
			return bad("only a running task can be requeued")
		}
		if t.Trace != nil {
			return bad("attempt %d has a trace: it is reconciled, never run again", t.Attempt)
		}
		if t.CancelRequested {
			return bad("a task whose cancel was requested is cancelled, not requeued")
		}
		return attempt()
	case EventRetried:
		if t.State != StateFailed {
			return bad("only a failed task can be retried")
		}
		if t.Attempt >= t.MaxAttempts {
			return bad("all %d attempts used", t.MaxAttempts)
		}
		if ev.Attempt != t.Attempt+1 {
			return bad("a retry starts attempt %d, not %d", t.Attempt+1, ev.Attempt)
		}
		return nil
	}
	return bad("unexpected event")
}

// Apply applies ev if it is legal; otherwise it returns the TransitionError
// and changes nothing. Events must come in sequence order.
func (s *State) Apply(ev *Event) error {
	t, err := s.check(ev)
	if err != nil {
		return err
	}
	if ev.Seq != 0 {
		s.Seq = ev.Seq
	}
	if ev.Type.logLevel() {
		return nil
	}
	if ev.Type == EventEnqueued {
		nt := EnqueuedTask(ev)
		t = &nt
		s.tasks[t.ID] = t
		s.order = append(s.order, t)
		s.counts[0]++
		heap.Push(&s.queued, t)
	} else {
		switch ev.Type {
		case EventStarted:
			s.move(t, StateRunning)
			t.Worker, t.Claim = ev.Worker, ev.Seq
			t.Attempts = max(t.Attempts, ev.Attempt)
		case EventTrace:
			tr := *ev.Trace // the state owns its copy; callers may reuse ev
			if tr.Acceptance != nil {
				a := *tr.Acceptance
				tr.Acceptance = &a
			}
			t.Trace, t.Last, t.LastAttempt = &tr, &tr, ev.Attempt
		case EventSucceeded:
			s.move(t, StateSucceeded)
		case EventFailed:
			s.move(t, StateFailed)
		case EventCancelRequested:
			t.CancelRequested = true
		case EventCancelled:
			s.move(t, StateCancelled)
		case EventRequeued:
			s.move(t, StateQueued)
		case EventRetried:
			t.Attempt = ev.Attempt
			t.Trace = nil
			s.move(t, StateQueued)
		}
	}
	t.UpdatedAt = ev.Time
	t.LastSeq = ev.Seq
	return nil
}

// EnqueuedTask is the task an enqueued event creates, exactly as Apply
// makes it: for a writer that indexes a batch it has just appended (whose
// events it holds) without replaying the batch into a State.
func EnqueuedTask(ev *Event) Task {
	return Task{
		ID: ev.Task, State: StateQueued, Attempt: 1, MaxAttempts: ev.MaxAttempts,
		Manifest: ev.Manifest, Run: ev.Run, CreatedAt: ev.Time, UpdatedAt: ev.Time,
		EnqSeq: ev.Seq, LastSeq: ev.Seq, hidx: -1,
	}
}

// move changes t's state and keeps the counts, the queue heap and the running
// set in step with it.
func (s *State) move(t *Task, to TaskState) {
	from := t.State
	s.counts[stateIndex(from)]--
	s.counts[stateIndex(to)]++
	t.State = to
	if from == StateQueued && t.hidx >= 0 {
		heap.Remove(&s.queued, t.hidx)
	}
	if from == StateRunning {
		delete(s.running, t.ID)
		t.Worker, t.Claim = "", 0
		t.CancelRequested = false
	}
	switch to {
	case StateQueued:
		heap.Push(&s.queued, t)
	case StateRunning:
		s.running[t.ID] = t
	}
}

// taskHeap orders queued tasks by enqueue sequence: oldest first, and a
// retried or requeued task keeps its place.
type taskHeap []*Task

func (h taskHeap) Len() int           { return len(h) }
func (h taskHeap) Less(i, j int) bool { return h[i].EnqSeq < h[j].EnqSeq }
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}
func (h *taskHeap) Push(x any) {
	t := x.(*Task)
	t.hidx = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.hidx = -1
	*h = old[:n-1]
	return t
}
