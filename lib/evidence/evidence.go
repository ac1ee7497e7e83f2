// Package evidence checks goal evidence against the rest of art: task
// evidence against an artq queue and event evidence against an artobs JSONL
// sink. Sources implements goal.Sources; set it as a goal.Store's Sources
// and every task:ID and event:ID a mutation appends is verified there.
//
// It only reads. The queue is replayed the way `artq status` replays it
// (queue.Inspect on a read-only backend: no lock, no recovery, nothing
// created or written, not even in a queue directory that does not exist);
// the sink is scanned by obs.Lookup (no lock, nothing written). A task whose
// worker died mid-run is therefore reported as the log says, running: it is
// recovery's job, not evidence's, to decide what happened to it.
//
// What it refuses: a task id that is not an artq task id (exit 2); a queue
// or a task that does not exist (exit 4); event evidence without a sink to
// check it in (exit 2); an event the sink does not hold (exit 4) or whose
// record does not verify (exit 125).
package evidence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// Sources reads tasks from one artq queue and events from one artobs JSONL
// sink. The zero value's queue is HOME/queues/default with an empty HOME;
// set Queue. Nothing is opened until the first question, so a mutation
// without task or event evidence never touches either. Safe for
// concurrent use; Close releases the queue.
type Sources struct {
	// Ctx bounds reading the queue (nil: context.Background()).
	Ctx context.Context
	// Queue names the file queue as artq's flags do: Dir (artq --dir),
	// else Home/queues/Queue. It is opened read-only. Hints name its fields
	// "Queue" and "Dir" (exitcode.Ref), which the CLI words as its flags.
	// Evidence reads file queues only, so it links no other backend.
	Queue file.Location
	// Sink is the artobs JSONL file; empty refuses event evidence.
	Sink string
	// SinkHint is the hint given when event evidence comes without a sink
	// (the CLI names its flags).
	SinkHint string

	mu  sync.Mutex
	b   queue.Backend
	q   *queue.Queue
	dir string
}

var _ goal.Sources = (*Sources)(nil)

// Task reads task id's state from the queue, with the log sequence it was
// read at.
func (s *Sources) Task(id string) (goal.TaskState, goal.QueueCheck, error) {
	if err := queue.ValidName("task", id); err != nil {
		return "", goal.QueueCheck{}, exitcode.Fieldf(exitcode.Usage, "task", id, "task %q: not an artq task id: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(id); err != nil {
		return "", goal.QueueCheck{}, err
	}
	var (
		state goal.TaskState
		qc    = goal.QueueCheck{Dir: s.dir}
	)
	err := s.q.View(s.ctx(), func(st *queue.State) error {
		t := st.Task(id)
		if t == nil {
			return exitcode.WithHint(exitcode.Field(exitcode.NotFound, "task", id, "not in the queue %s: %w", s.dir, queue.ErrNotFound),
				"'artq status' lists the queue's tasks; another queue is chosen with %s NAME or %s DIR", exitcode.Ref("Queue"), exitcode.Ref("Dir"))
		}
		state = goal.TaskState(t.State)
		qc.Seq, qc.Attempts, qc.UpdatedAt = st.Seq, t.Attempts, t.UpdatedAt.UTC()
		return nil
	})
	if err != nil {
		return "", goal.QueueCheck{}, err
	}
	return state, qc, nil
}

// open opens the queue read-only, once. The error names the task that
// needed it.
func (s *Sources) open(id string) error {
	if s.q != nil {
		return nil
	}
	dir, err := s.Queue.Path()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return exitcode.Errorf(exitcode.Internal, "queue %s: %w", s.Queue.Dir, err)
	}
	// A read-only backend reads a missing directory as an empty queue;
	// evidence wants to say that there is no queue at all.
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return exitcode.WithHint(exitcode.Field(exitcode.NotFound, "task", id, "no queue at %s", dir),
			"the queue is chosen with %s NAME (under the state home) or %s DIR, as in artq", exitcode.Ref("Queue"), exitcode.Ref("Dir"))
	}
	b, err := file.Open(dir, file.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	q, err := queue.Inspect(s.ctx(), b)
	if err != nil {
		b.Close()
		return fmt.Errorf("queue %s: %w", dir, err)
	}
	s.b, s.q, s.dir = b, q, dir
	return nil
}

// Event finds event id in the sink and verifies its record.
func (s *Sources) Event(id string) (goal.SinkCheck, error) {
	if s.Sink == "" {
		var err error = exitcode.Field(exitcode.Usage, "event", id, "no events file to check it in")
		if s.SinkHint != "" {
			err = exitcode.WithHint(err, "%s", s.SinkHint)
		}
		return goal.SinkCheck{}, err
	}
	path, err := filepath.Abs(s.Sink)
	if err != nil {
		return goal.SinkCheck{}, exitcode.Errorf(exitcode.Internal, "events %s: %w", s.Sink, err)
	}
	f, err := obs.Lookup(path, id)
	if err != nil {
		return goal.SinkCheck{}, err
	}
	env := f.Envelope
	return goal.SinkCheck{
		Path: path, Line: f.Line,
		Subject: env.Subject(), Type: env.Type(), Seq: env.Seq(), Time: env.Time().UTC(),
	}, nil
}

// Close releases the queue, if it was opened.
func (s *Sources) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		return nil
	}
	err := s.b.Close()
	s.b, s.q = nil, nil
	return err
}

func (s *Sources) ctx() context.Context {
	if s.Ctx == nil {
		return context.Background()
	}
	return s.Ctx
}
