package obs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Outcome is what a sink did with one envelope.
type Outcome uint8

// Outcomes. A Duplicate is a success: the sink already holds that id.
const (
	Failed Outcome = iota
	Appended
	Duplicate
)

func (o Outcome) String() string {
	switch o {
	case Appended:
		return "appended"
	case Duplicate:
		return "duplicate"
	}
	return "failed"
}

// Sink keeps envelopes. Implementations are safe for concurrent use and
// idempotent by envelope id: appending an id they hold is a Duplicate, not
// a second record. Append is synchronous: when it returns, the envelope is
// as durable as the sink promises, which makes sinks the backpressure
// boundary of the Emitter.
type Sink interface {
	Name() string
	Append(ctx context.Context, env *Envelope) (Outcome, error)
	Close() error
}

// sequencer is a sink that knows the last sequence number of each subject
// and takes part in allocating the next one. begin and end bracket one
// append: for a JSONL file they hold the file's flock and catch up with
// what other processes appended, so sequence numbers stay consistent across
// processes writing one file.
type sequencer interface {
	Sink
	begin() error
	end()
	lastSeq(subject string) uint64
	// holds reports whether the sink already has an envelope with this id
	// (within what it remembers), under begin.
	holds(id string) bool
	// lockOrder sorts sequencers so that every process takes their locks in
	// the same order and two emitters never deadlock.
	lockOrder() string
}

// batcher is a sink that appends a batch of envelopes with one write and
// one durability wait; outcomes and errors are per envelope. The wait runs
// after the Emitter's lock is released, so concurrent emitters share one
// fsync (group commit).
type batcher interface {
	appendBatch(ctx context.Context, envs []*Envelope) ([]Outcome, []error, func() error)
}

// idSet remembers the last capacity ids seen, for duplicate detection in
// bounded memory.
type idSet struct {
	m    map[digest]struct{}
	ring []digest
	next int
	max  int
}

func newIDSet(capacity int) *idSet {
	return &idSet{m: make(map[digest]struct{}, min(capacity, 1024)), max: capacity}
}

func (s *idSet) has(d digest) bool {
	_, ok := s.m[d]
	return ok
}

func (s *idSet) add(d digest) {
	if s.has(d) {
		return
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, d)
	} else {
		delete(s.m, s.ring[s.next])
		s.ring[s.next] = d
		s.next = (s.next + 1) % s.max
	}
	s.m[d] = struct{}{}
}

// DefaultRememberIDs is how many recent ids an in-process sink remembers
// for duplicate detection (about 5 MB).
const DefaultRememberIDs = 1 << 16

// Memory is a sink that keeps envelopes in memory, in order. Tests and
// in-process consumers read them back with Envelopes.
type Memory struct {
	mu     sync.Mutex
	envs   []*Envelope
	ids    map[string]struct{}
	last   map[string]uint64
	closed bool
}

// NewMemory returns an empty memory sink.
func NewMemory() *Memory {
	return &Memory{ids: map[string]struct{}{}, last: map[string]uint64{}}
}

// Name implements Sink.
func (m *Memory) Name() string { return "memory" }

// Append implements Sink.
func (m *Memory) Append(_ context.Context, env *Envelope) (Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Failed, ErrClosed
	}
	if _, ok := m.ids[env.id]; ok {
		return Duplicate, nil
	}
	if env.seq <= m.last[env.subject] {
		return Failed, fmt.Errorf("%s %s seq %d (holds %d): %w", env.subject, env.id, env.seq, m.last[env.subject], ErrStale)
	}
	m.envs = append(m.envs, env)
	m.ids[env.id] = struct{}{}
	m.last[env.subject] = env.seq
	return Appended, nil
}

// Envelopes returns the envelopes appended so far, in order.
func (m *Memory) Envelopes() []*Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Envelope(nil), m.envs...)
}

// Close implements Sink.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

func (m *Memory) begin() error      { return nil }
func (m *Memory) end()              {}
func (m *Memory) lockOrder() string { return "" }
func (m *Memory) holds(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[id]
	return ok
}

func (m *Memory) lastSeq(subject string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last[subject]
}

// Writer is a sink that writes each envelope as one JSON Lines record to an
// io.Writer (stdout). It remembers recent ids to stay idempotent, and a
// short write poisons it like a JSONL file.
type Writer struct {
	name     string
	mu       sync.Mutex
	w        io.Writer
	ids      *idSet
	poisoned error
	buf      []byte
}

// NewWriter returns a sink writing to w, called name in messages.
func NewWriter(name string, w io.Writer) *Writer {
	return &Writer{name: name, w: w, ids: newIDSet(DefaultRememberIDs)}
}

// Name implements Sink.
func (s *Writer) Name() string { return s.name }

// Append implements Sink: one Write call per record.
func (s *Writer) Append(ctx context.Context, env *Envelope) (Outcome, error) {
	outs, errs, _ := s.appendBatch(ctx, []*Envelope{env})
	return outs[0], errs[0]
}

// appendBatch writes the new envelopes of a batch with one Write call.
func (s *Writer) appendBatch(_ context.Context, envs []*Envelope) ([]Outcome, []error, func() error) {
	outs, errs := make([]Outcome, len(envs)), make([]error, len(envs))
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(err error) ([]Outcome, []error, func() error) {
		for k := range envs {
			if outs[k] != Duplicate {
				outs[k], errs[k] = Failed, err
			}
		}
		return outs, errs, nil
	}
	if s.poisoned != nil {
		return fail(s.poisoned)
	}
	if s.w == nil {
		return fail(ErrClosed)
	}
	s.buf = s.buf[:0]
	var fresh []digest
	for k, env := range envs {
		d, _ := digestOf(env.id)
		if s.ids.has(d) || slices.Contains(fresh, d) {
			outs[k] = Duplicate
			continue
		}
		fresh = append(fresh, d)
		outs[k] = Appended
		s.buf = env.AppendLine(s.buf)
	}
	if len(s.buf) == 0 {
		return outs, errs, nil
	}
	n, err := s.w.Write(s.buf)
	if n != len(s.buf) || err != nil {
		if err == nil {
			err = io.ErrShortWrite
		}
		if n > 0 {
			s.poisoned = fmt.Errorf("%w: wrote %d of %d bytes: %v", ErrPoisoned, n, len(s.buf), err)
			err = s.poisoned
		}
		return fail(err)
	}
	for _, d := range fresh {
		s.ids.add(d)
	}
	return outs, errs, nil
}

// Close implements Sink; it does not close the underlying writer.
func (s *Writer) Close() error {
	s.mu.Lock()
	s.w = nil
	s.mu.Unlock()
	return nil
}
