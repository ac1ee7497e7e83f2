package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// Backend is the durable, totally ordered log a Queue replays, plus worker
// leases. The reducer, recovery, the worker and every CLI contract live in
// this package and are shared by all backends; a backend only stores and
// orders records. Two exist by design: lib/queue/file (the default, a local
// fsync'd log under flock) and a NATS JetStream stream.
//
// Concurrency is optimistic and per task, the model JetStream offers with
// Nats-Expected-Last-Subject-Sequence on a subject per task: a Proposal says
// which event it expects to be the task's latest, and the append fails with
// ErrStale if another writer got there first. The caller catches up and
// decides again. Because a task's state is a function of that task's events
// alone, an unchanged last event means the decision still holds.
type Backend interface {
	// Append appends the proposals in order, all of them or none (also
	// across a crash in the middle of the append: replay applies them
	// whole or not at all), and
	// returns their events with Seq assigned. It returns only after the
	// events are on stable storage; concurrent calls in one process may
	// share one sync (group commit). A failed condition returns an error
	// that wraps ErrStale and appends nothing. Within one call only the
	// first proposal for a task is checked; later ones for the same task
	// follow it.
	Append(ctx context.Context, ps []Proposal) ([]*Event, error)

	// Snapshot returns the newest snapshot, or nil when there is none. The
	// caller owns the result (NewStateFrom builds the state in it).
	Snapshot(ctx context.Context) (*Snapshot, error)

	// Read calls fn, in sequence order, for every event after seq `after`
	// that the log holds now, and returns when it reaches the end. Events
	// no longer held (compacted into a snapshot) give a *CompactedError
	// naming the first sequence still held. A corrupt log gives a
	// *CorruptError. A torn last record (a crash mid-append, or an append
	// still in progress) is not delivered and is not an error.
	Read(ctx context.Context, after uint64, fn func(*Event) error) error

	// Wait blocks until the log may hold an event after seq `after`, or ctx
	// ends (returning its cause). It may return early; callers Read again.
	Wait(ctx context.Context, after uint64) error

	// Compact makes snap the log's new base and drops the events it covers.
	// It fails with ErrStale when snap is older than the newest snapshot or
	// than the oldest event still held.
	Compact(ctx context.Context, snap *Snapshot) error

	// AcquireLease marks worker as alive until Release or the process's
	// death. ttl is how long a lease outlives a silent holder on backends
	// that need heartbeats (NATS); the file backend's lease is an flock and
	// dies with the process.
	AcquireLease(ctx context.Context, worker string, ttl time.Duration) (Lease, error)

	// Alive reports whether worker holds its lease now.
	Alive(ctx context.Context, worker string) (bool, error)

	// Check verifies the stored log without writing anything (fsck): every
	// record's checksum and sequence, the snapshot, a torn tail. Corruption
	// is returned as a *CorruptError along with what was learned.
	Check(ctx context.Context) (*LogCheck, error)

	// ReadOnly reports whether the backend was opened for inspection only;
	// such a backend writes nothing, not even a lock file.
	ReadOnly() bool

	Close() error
}

// EachAppender is a Backend that can commit several independent appends
// at once: each call is all-or-none with its own conditions, exactly as
// one Append, and all of them share one write and one sync (the file
// backend's group commit). Claiming several tasks at once uses it so their
// started events cost one fsync, not one each. The results are in the
// order of calls.
type EachAppender interface {
	AppendEach(ctx context.Context, calls [][]Proposal) ([][]*Event, []error)
}

// Proposal is one event offered to Backend.Append with its condition.
type Proposal struct {
	Event *Event
	// Expect is the sequence the task's latest event must have for the
	// append to go ahead; 0 means the task must have no events yet.
	Expect uint64
	// Any skips the condition: log-level events, and enqueues of generated
	// ids (random, so no condition is needed and none is paid for).
	Any bool
	// Owned hands Event to the backend, so that a large batch is not held
	// twice (a 100,000-task enqueue --batch: its events, not a copy of
	// them). Append may then complete the event in place (Seq, Batch,
	// Commit, and Time when it is zero) and return that very event instead
	// of a copy. The caller gives the event up for the call: it neither
	// reads nor changes it until Append returns, and afterwards treats it
	// as the returned event (read-only). A failed append leaves Seq zero,
	// so the event may be proposed again. Without Owned (every caller but
	// the queue's batch enqueue) Append copies the event and never changes
	// or keeps the caller's.
	Owned bool
}

// Lease is a worker's claim to be alive.
type Lease interface {
	// Lost is closed if the backend can no longer vouch for the lease (a
	// NATS lease that could not be renewed). The file backend's never is.
	Lost() <-chan struct{}
	// Held reports, by the local clock and without a network call,
	// whether the lease is certainly still held: false once Lost is
	// closed, and on NATS as soon as a whole TTL has passed since the
	// last renewal that the server acknowledged was sent (the server
	// expires the key no sooner). The worker asks before every claim and
	// every append for a run, so a worker that was stopped (SIGSTOP,
	// a pause) past its lease claims nothing and records nothing.
	Held() bool
	// Release gives the lease up; tasks still marked running under it are
	// then recovered by the next Open.
	Release() error
}

// Snapshot is the state of a queue through Seq, so replay can start there.
type Snapshot struct {
	Seq   uint64
	Time  time.Time
	Tasks []Task // enqueue order
}

// LogCheck is what Backend.Check learned about the stored log.
type LogCheck struct {
	Location    string    `json:"location"`
	SnapshotSeq uint64    `json:"snapshot_seq"`
	FirstSeq    uint64    `json:"first_seq"`
	LastSeq     uint64    `json:"last_seq"`
	Events      int64     `json:"events"`
	Bytes       int64     `json:"bytes"`
	TornTail    *TornTail `json:"torn_tail,omitempty"`
	Notes       []string  `json:"notes,omitempty"`
}

// TornTail is what a crash in the middle of an append leaves: an incomplete
// final line, or (file backend) a batch without its commit. A complete line
// that does not check is corruption, never a torn tail. Open cuts a torn
// tail and records a truncated event.
type TornTail struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// Errors callers test with errors.Is.
var (
	// ErrStale: a proposal's condition failed; catch up and decide again.
	ErrStale = exitcode.Sentinel(exitcode.Conflict, "the task changed meanwhile")
	// ErrNotFound: no such task.
	ErrNotFound = exitcode.Sentinel(exitcode.NotFound, "no such task")
	// ErrReadOnly: a write through a backend opened for inspection.
	ErrReadOnly = exitcode.Sentinel(exitcode.Internal, "queue opened read-only")
	// ErrConflict: a request the queue's state refuses (terminal state,
	// duplicate id with another manifest, no attempts left).
	ErrConflict = exitcode.Sentinel(exitcode.Conflict, "conflict")
)

// StaleError is a failed append condition.
type StaleError struct {
	Task   string
	Expect uint64
	Have   uint64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("task %s: expected latest event %d, log has %d", e.Task, e.Expect, e.Have)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// ExitCode implements exitcode.Coder.
func (e *StaleError) ExitCode() int { return exitcode.Conflict }

// CompactedError says the events asked for were folded into a snapshot.
type CompactedError struct {
	First uint64 // first sequence the log still holds
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("events before %d were compacted into the snapshot", e.First)
}

// CorruptError is a log or snapshot that cannot be trusted: a bad record
// before the tail, a sequence gap, an illegal transition. It is the tool's own
// failure (exit 125) and names where.
type CorruptError struct {
	Path   string
	Offset int64  // -1 when not a byte position
	Seq    uint64 // 0 when unknown
	Why    string
	Err    error
}

func (e *CorruptError) Error() string {
	where := e.Path
	if e.Offset >= 0 {
		where += fmt.Sprintf(": corrupt at byte %d", e.Offset)
	} else {
		where += ": corrupt"
	}
	if e.Seq != 0 {
		where += fmt.Sprintf(" (seq %d)", e.Seq)
	}
	return where + ": " + e.Why
}

// Unwrap exposes the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder: the tool's own failure.
func (e *CorruptError) ExitCode() int { return exitcode.Internal }

// Hint tells the user what to run next.
func (e *CorruptError) Hint() string {
	return "run 'artq fsck' for a full report; nothing was written"
}

// IsCorrupt reports whether err is a *CorruptError.
func IsCorrupt(err error) bool {
	var c *CorruptError
	return errors.As(err, &c)
}

// DefaultLease is how long a worker's lease lasts without a renewal when
// its configuration says nothing.
const DefaultLease = 30 * time.Second

// Correlation is the correlation id of task id in queue name,
// queue/NAME/task/ID: the worker gives it to every task (ART_CORRELATION)
// and the queue's observer puts it on every event of the task.
func Correlation(name, id string) string { return "queue/" + name + "/task/" + id }
