package queue

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Batch is enqueue requests held as the events that will store them: each
// request's id and canonical manifest, already checked. Building one costs
// the events and the manifests' bytes, not a decoded Task per request, so
// a batch of 100,000 tasks read from a stream (ReadBatch) holds about
// 35 MB. Queue.EnqueueBatch appends it; Queue.Enqueue is the same for a
// slice.
type Batch struct {
	chunks       [][]Event       // the enqueued events, batchChunk a chunk: pointers into them stay put
	n            int             // requests added
	given        []uint64        // bit i: request i's id was chosen by the caller or its manifest
	dupOf        map[int32]int32 // request → an identical earlier request with its id
	arena        [][]byte        // manifests; a chunk never grows past its capacity, so slices into it stay put
	scratch      []byte          // the manifest being encoded
	lastRun      *RunSpec        // a copy of the last run spec encoded, and its bytes
	lastRunBytes []byte
	byID         map[string]int32 // ids the caller chose → first request with it
	ids          idSource
	spent        bool // enqueued: its events are gone
}

var errSpent = exitcode.Errorf(exitcode.Internal, "batch: already enqueued")

// batchChunk is the number of events in one chunk of a Batch.
const batchChunk = 4096

func (b *Batch) event(i int) *Event { return &b.chunks[i/batchChunk][i%batchChunk] }

func (b *Batch) isGiven(i int) bool { return b.given[i/64]&(1<<(i%64)) != 0 }

// arenaChunk is the size of one chunk of a Batch's manifest arena.
const arenaChunk = 1 << 20

// Len is the number of requests added.
func (b *Batch) Len() int { return b.n }

// Add checks r and adds it in its stored form (a generated id if it names
// none); the Task is not kept. An error names what is wrong and adds
// nothing: a task given twice in the batch with different manifests is a
// conflict (exit 3), everything else invalid input (exit 2).
func (b *Batch) Add(r EnqueueRequest) error {
	if b.spent {
		return errSpent
	}
	if r.Task == nil {
		return exitcode.Fieldf(exitcode.Usage, "Task", "", "request %d: no task", b.n+1)
	}
	if r.MaxAttempts < 1 {
		return exitcode.Field(exitcode.Usage, "max_attempts", "", "must be at least 1, got %d", r.MaxAttempts)
	}
	id := r.ID
	given := r.ID != "" || r.Task.ID != ""
	if id == "" {
		id = r.Task.ID
	}
	if r.ID != "" && r.Task.ID != "" && r.ID != r.Task.ID {
		return exitcode.Fieldf(exitcode.Usage, "ID", r.ID, "%s %s and the manifest's id %s differ", exitcode.Ref("ID"), r.ID, r.Task.ID)
	}
	if id == "" {
		id = b.ids.next()
	} else if err := ValidName("id", id); err != nil {
		return err
	}
	run, err := b.run(r.Run)
	if err != nil {
		return err
	}
	m, err := b.appendManifest(r.Task, id)
	if err != nil {
		return err
	}
	id = idIn(m, id)
	ev := Event{Type: EventEnqueued, Task: id, MaxAttempts: r.MaxAttempts, Manifest: m, Run: run}
	i := int32(b.n)
	if given {
		if b.byID == nil {
			b.byID = map[string]int32{}
		}
		if j, ok := b.byID[id]; ok {
			p := b.event(int(j))
			if string(p.Manifest) != string(m) || string(p.Run) != string(run) || p.MaxAttempts != ev.MaxAttempts {
				return exitcode.Errorf(exitcode.Conflict, "task %s: given twice with different manifests", id)
			}
			if b.dupOf == nil {
				b.dupOf = map[int32]int32{}
			}
			b.dupOf[i] = j
		} else {
			b.byID[id] = i
		}
	}
	if b.n%batchChunk == 0 {
		// The first chunk starts small and grows by append (no pointer
		// into it is kept across Adds), so a one-task Enqueue does not
		// allocate a whole chunk; later chunks are allocated whole.
		c := batchChunk
		if b.n == 0 {
			c = 4
		}
		b.chunks = append(b.chunks, make([]Event, 0, c))
	}
	if b.n%64 == 0 {
		b.given = append(b.given, 0)
	}
	if given {
		b.given[b.n/64] |= 1 << (b.n % 64)
	}
	last := &b.chunks[len(b.chunks)-1]
	*last = append(*last, ev)
	b.n++
	return nil
}

// appendManifest writes the canonical form of t with id into the arena
// and returns it.
func (b *Batch) appendManifest(t *execx.Task, id string) ([]byte, error) {
	m, err := appendCanonical(b.scratch[:0], t, id)
	if err != nil {
		return nil, err
	}
	b.scratch = m
	n := len(b.arena)
	if n == 0 || len(b.arena[n-1])+len(m) > cap(b.arena[n-1]) {
		// Chunks double from 1 KiB to arenaChunk: a small batch holds a
		// small arena. A chunk never grows, so slices into it stay put.
		size := 1 << 10
		if n > 0 {
			size = min(2*cap(b.arena[n-1]), arenaChunk)
		}
		b.arena = append(b.arena, make([]byte, 0, max(size, len(m))))
		n++
	}
	cur := b.arena[n-1]
	start := len(cur)
	cur = append(cur, m...)
	b.arena[n-1] = cur
	return cur[start:len(cur):len(cur)], nil
}

// idIn returns id as a view of its bytes inside m, the task's manifest in
// the arena, so that a batch holds each id once (100,000 generated ids:
// 3 MB less). Arena bytes never change once written (a chunk only grows
// within its capacity), which is what unsafe.String asks of them. A valid
// id is never escaped in a manifest; should it not be found, id is
// returned as it is.
func idIn(m []byte, id string) string {
	if len(m) == 0 || id == "" {
		return id
	}
	k := strings.Index(unsafe.String(&m[0], len(m)), id)
	if k < 0 {
		return id
	}
	return unsafe.String(&m[k], len(id))
}

// run encodes s, or returns the bytes of the last spec encoded when s
// equals it (a CLI batch gives every task the same one), so equal specs
// share one encoding.
func (b *Batch) run(s *RunSpec) ([]byte, error) {
	if s.IsZero() {
		return nil, nil
	}
	if b.lastRun != nil && s.Workspace == b.lastRun.Workspace && s.Source == b.lastRun.Source && slices.Equal(s.Acceptance, b.lastRun.Acceptance) {
		return b.lastRunBytes, nil
	}
	data, err := encodeRunSpec(s)
	if err != nil {
		return nil, err
	}
	c := *s
	c.Acceptance = slices.Clone(s.Acceptance)
	b.lastRun, b.lastRunBytes = &c, data
	return data, nil
}

// BatchOptions say how ReadBatch turns lines into requests.
type BatchOptions struct {
	// MaxAttempts of every task (at least 1).
	MaxAttempts int
	// IdempotencyKey, if set, names every task whose manifest has no id
	// from the key and the task's position, as IdempotentIDs does.
	IdempotencyKey string
	// Run is every task's run spec; nil asks for nothing.
	Run *RunSpec
	// Check, if set, vets each decoded task before it is added; line is
	// its line number. Its error is returned as it is. The Task is valid
	// only during the call: keep nothing of it.
	Check func(line int, t *execx.Task) error
}

// ReadBatch reads JSON Lines of Task manifests from r (blank lines
// skipped) into a Batch, one line at a time: the input is never held
// whole, and a decoded Task only until its line is added. The first bad
// line stops it with an error naming the line and the field ("line 2:
// task.program: required"); an empty input is an error too. The caller
// appends nothing unless it returns a Batch, so a batch is all or none.
func ReadBatch(r io.Reader, opt BatchOptions) (*Batch, error) {
	var key idemKey
	if opt.IdempotencyKey != "" {
		var err error
		if key, err = newIdemKey(opt.IdempotencyKey); err != nil {
			return nil, err
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxManifestBytes+1)
	b := &Batch{}
	var reuse execx.Task // the simple shape decodes into it: Add keeps nothing of it
	line := 0
	for sc.Scan() {
		line++
		data := sc.Bytes()
		if blank(data) {
			continue
		}
		t, err := decodeManifestFast(data, &reuse)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if opt.Check != nil {
			if err := opt.Check(line, t); err != nil {
				return nil, err
			}
		}
		req := EnqueueRequest{Task: t, MaxAttempts: opt.MaxAttempts, Run: opt.Run}
		if key.prefix != "" && t.ID == "" {
			req.ID = key.id(b.Len() + 1)
		}
		if err := b.Add(req); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: %w", line+1, jsonx.Errorf("task", "manifest is more than %d bytes", MaxManifestBytes))
		}
		return nil, exitcode.Errorf(exitcode.Internal, "read batch: %w", err)
	}
	if b.Len() == 0 {
		return nil, jsonx.Errorf("batch", "no Task manifests in the input")
	}
	return b, nil
}

// blank is a line of white space only, skipped (Unicode white space too, as bytes.TrimSpace has it).
func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// idemKey derives ids from an idempotency key (IdempotentIDs).
type idemKey struct{ prefix string }

func newIdemKey(key string) (idemKey, error) {
	if key == "" || len(key) > 1024 {
		return idemKey{}, exitcode.Field(exitcode.Usage, "IdempotencyKey", "", "want 1 to 1024 bytes, got %d", len(key))
	}
	sum := sha256.Sum256([]byte(key))
	return idemKey{prefix: "k" + hex.EncodeToString(sum[:8]) + "-"}, nil
}

// id is the id of the request at 1-based position pos.
func (k idemKey) id(pos int) string { return k.prefix + strconv.Itoa(pos) }

// BatchResult is what EnqueueBatch did.
type BatchResult struct {
	// Requests is the number of requests; Created how many new tasks they
	// made (the rest existed already, identical, in the queue or earlier
	// in the batch).
	Requests, Created int
	// FirstSeq and LastSeq are the appended events' sequences (0 when
	// nothing was appended).
	FirstSeq, LastSeq uint64

	b        *Batch
	evs      []*Event             // the created tasks' events, in request order
	existing map[int32]TaskStatus // requests whose task existed in the queue
}

// Events are the enqueued events of the tasks the batch created, as
// appended (Seq set), in request order: one append, so their sequences
// run from FirstSeq to LastSeq. They are the result's: read, never change.
func (r *BatchResult) Events() []*Event { return r.evs }

// Each calls fn for every request in order with what the enqueue did for
// it, stopping at the first error.
func (r *BatchResult) Each(fn func(Enqueued) error) error {
	var firsts map[int32]TaskStatus // statuses later duplicates repeat
	k := 0
	for i := range r.b.n {
		var e Enqueued
		j, dup := r.b.dupOf[int32(i)]
		if dup {
			e.Status = firsts[j]
		} else if s, ok := r.existing[int32(i)]; ok {
			e.Status = s
		} else {
			e = Enqueued{Status: statusOfEnqueued(r.evs[k]), Created: true}
			k++
		}
		if !dup && len(r.b.dupOf) > 0 && r.b.isGiven(i) {
			if firsts == nil {
				firsts = map[int32]TaskStatus{}
			}
			firsts[int32(i)] = e.Status
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// EnqueueBatch adds b's tasks in one append: one sync for the whole batch,
// and all of them or none (also across a crash). A task that exists
// already with the same manifest, run spec and max_attempts is left as it
// is; with anything else it is a conflict (exit 3) and nothing is
// appended. Only a batch with ids of the caller's choosing reads the
// queue's state; generated ids cannot collide, so a batch of them costs
// one append however long the log. b is spent: add nothing to it after.
func (q *Queue) EnqueueBatch(ctx context.Context, b *Batch) (*BatchResult, error) {
	if b.spent {
		return nil, errSpent
	}
	res := &BatchResult{Requests: b.Len(), b: b}
	if b.Len() == 0 {
		return res, nil
	}
	now := q.now().UTC()
	ps := make([]Proposal, 0, b.Len()-len(b.dupOf))
	evs, err := q.updateMaybe(ctx, len(b.byID) > 0, func(st *State) ([]Proposal, error) {
		res.existing, ps = nil, ps[:0]
		for i := range b.n {
			if _, dup := b.dupOf[int32(i)]; dup {
				continue
			}
			ev := b.event(i)
			given := b.isGiven(i)
			if st != nil && given {
				if t := st.Task(ev.Task); t != nil {
					if string(t.Manifest) != string(ev.Manifest) || string(t.Run) != string(ev.Run) || t.MaxAttempts != ev.MaxAttempts {
						return nil, exitcode.Errorf(exitcode.Conflict, "task %s: already enqueued with a different manifest, run spec or max_attempts", ev.Task)
					}
					if res.existing == nil {
						res.existing = map[int32]TaskStatus{}
					}
					res.existing[int32(i)] = StatusOf(t)
					continue
				}
			}
			ev.Time = now
			// A caller's id must not exist yet; a generated one cannot.
			// The events are handed over: the backend stores these very
			// ones rather than a copy of the whole batch.
			ps = append(ps, Proposal{Event: ev, Expect: 0, Any: !given, Owned: true})
		}
		return ps, nil
	})
	if err != nil {
		return nil, err
	}
	// The backend returned the batch's own events (Proposal.Owned): the
	// result holds them now, and b holds nothing more.
	b.chunks, b.arena, b.scratch, b.spent = nil, nil, nil, true
	res.evs, res.Created = evs, len(evs)
	if len(evs) > 0 {
		res.FirstSeq, res.LastSeq = evs[0].Seq, evs[len(evs)-1].Seq
	}
	return res, nil
}

// idSource makes NewID's ids with randomness read in blocks, not one
// system call per id. The block starts at one id's worth and grows to
// 400 ids, so a one-task enqueue reads 10 random bytes, a batch few
// blocks.
type idSource struct {
	buf []byte
	off int
}

func (s *idSource) next() string {
	if s.off+10 > len(s.buf) {
		n := min(max(2*len(s.buf), 10), 4000)
		if cap(s.buf) < n {
			s.buf = make([]byte, n)
		}
		s.buf = s.buf[:n]
		if _, err := rand.Read(s.buf); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		s.off = 0
	}
	var r [10]byte
	copy(r[:], s.buf[s.off:])
	s.off += 10
	return idFrom(time.Now(), r)
}
