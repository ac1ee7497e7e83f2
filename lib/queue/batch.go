package queue

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Batch is enqueue requests held in the form they are stored in: each
// request's id and canonical manifest, already checked. Building one costs
// the manifests' bytes, not a decoded Task per request, so a batch of
// 100,000 tasks read from a stream (ReadBatch) fits in a few tens of MB.
// Queue.EnqueueBatch appends it; Queue.Enqueue is the same for a slice.
type Batch struct {
	items  []batchItem
	arena  [][]byte       // manifests; a chunk never grows past its capacity, so slices into it stay put
	runs   [][]byte       // distinct encoded run specs; batchItem.run indexes it
	runOf  map[*RunSpec]int32
	byID   map[string]int32 // ids the caller chose → first request with it
	chosen bool             // some request chose its id: the enqueue needs the queue's state
	dups   int              // requests identical to an earlier one
	ids    idSource
}

type batchItem struct {
	id       string
	manifest []byte
	run      int32 // index into Batch.runs; -1 for none
	max      int32
	dupOf    int32 // an identical earlier request in the batch, or -1
	given    bool  // the caller (or the manifest) chose the id
}

// arenaChunk is the size of one chunk of a Batch's manifest arena.
const arenaChunk = 1 << 20

// Len is the number of requests added.
func (b *Batch) Len() int { return len(b.items) }

// Add checks r and adds it in its stored form (a generated id if it names
// none); the Task is not kept. An error names what is wrong and adds
// nothing: a task given twice in the batch with different manifests is a
// conflict (exit 3), everything else invalid input (exit 2).
func (b *Batch) Add(r EnqueueRequest) error {
	if r.Task == nil {
		return exitcode.Errorf(exitcode.Usage, "request %d: no task", len(b.items)+1)
	}
	if r.MaxAttempts < 1 {
		return exitcode.Errorf(exitcode.Usage, "max_attempts: must be at least 1, got %d", r.MaxAttempts)
	}
	if r.MaxAttempts > 1<<31-1 {
		return exitcode.Errorf(exitcode.Usage, "max_attempts: at most %d, got %d", 1<<31-1, r.MaxAttempts)
	}
	id := r.ID
	given := r.ID != "" || r.Task.ID != ""
	if id == "" {
		id = r.Task.ID
	}
	if r.ID != "" && r.Task.ID != "" && r.ID != r.Task.ID {
		return exitcode.Errorf(exitcode.Usage, "--id %s and the manifest's id %s differ", r.ID, r.Task.ID)
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
	t := *r.Task
	t.ID = id
	m, err := b.appendManifest(&t)
	if err != nil {
		return err
	}
	it := batchItem{id: id, manifest: m, run: run, max: int32(r.MaxAttempts), dupOf: -1, given: given}
	if given {
		b.chosen = true
		if b.byID == nil {
			b.byID = map[string]int32{}
		}
		if j, ok := b.byID[id]; ok {
			p := &b.items[j]
			if string(p.manifest) != string(m) || p.run != run || p.max != it.max {
				return exitcode.Errorf(exitcode.Conflict, "task %s: given twice with different manifests", id)
			}
			it.dupOf = j
			b.dups++
		} else {
			b.byID[id] = int32(len(b.items))
		}
	}
	b.items = append(b.items, it)
	return nil
}

// appendManifest writes t's canonical form into the arena and returns it.
func (b *Batch) appendManifest(t *execx.Task) ([]byte, error) {
	var cur []byte
	if n := len(b.arena); n > 0 {
		cur = b.arena[n-1]
	}
	start := len(cur)
	out, err := appendCanonical(cur, t)
	if err != nil {
		return nil, err
	}
	if cap(out) != cap(cur) || cur == nil {
		// It did not fit: start a chunk of its own size or arenaChunk.
		m := out[start:]
		chunk := make([]byte, 0, max(arenaChunk, len(m)))
		chunk = append(chunk, m...)
		b.arena = append(b.arena, chunk)
		return chunk[:len(m):len(m)], nil
	}
	b.arena[len(b.arena)-1] = out
	return out[start:len(out):len(out)], nil
}

// run encodes s once per distinct *RunSpec (a CLI batch shares one).
func (b *Batch) run(s *RunSpec) (int32, error) {
	if s.IsZero() {
		return -1, nil
	}
	if i, ok := b.runOf[s]; ok {
		return i, nil
	}
	data, err := encodeRunSpec(s)
	if err != nil {
		return 0, err
	}
	for i, r := range b.runs { // same bytes from another pointer: share
		if string(r) == string(data) {
			return int32(i), nil
		}
	}
	if b.runOf == nil {
		b.runOf = map[*RunSpec]int32{}
	}
	b.runs = append(b.runs, data)
	b.runOf[s] = int32(len(b.runs) - 1)
	return int32(len(b.runs) - 1), nil
}

func (b *Batch) runBytes(i int32) []byte {
	if i < 0 {
		return nil
	}
	return b.runs[i]
}

// BatchOptions say how ReadBatch turns lines into requests.
type BatchOptions struct {
	// MaxAttempts of every task (at least 1).
	MaxAttempts int
	// IdempotencyKey, if set, names every task whose manifest has no id
	// (IdempotentID of the key and the task's position).
	IdempotencyKey string
	// Run is every task's run spec; nil asks for nothing.
	Run *RunSpec
	// Check, if set, vets each decoded task before it is added; line is
	// its line number. Its error is returned as it is.
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
	line := 0
	for sc.Scan() {
		line++
		data := sc.Bytes()
		if blank(data) {
			continue
		}
		t, err := decodeManifestFast(data)
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

func blank(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// idemKey derives ids from an idempotency key (IdempotentIDs).
type idemKey struct{ prefix string }

func newIdemKey(key string) (idemKey, error) {
	if key == "" || len(key) > 1024 {
		return idemKey{}, exitcode.Errorf(exitcode.Usage, "--idempotency-key: want 1 to 1024 bytes, got %d", len(key))
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

// Each calls fn for every request in order with what the enqueue did for
// it, stopping at the first error.
func (r *BatchResult) Each(fn func(Enqueued) error) error {
	var firsts map[int32]TaskStatus // statuses later duplicates repeat
	k := 0
	for i, it := range r.b.items {
		var e Enqueued
		if it.dupOf >= 0 {
			e.Status = firsts[it.dupOf]
		} else if s, ok := r.existing[int32(i)]; ok {
			e.Status = s
		} else {
			e = Enqueued{Status: statusOfEnqueued(r.evs[k]), Created: true}
			k++
		}
		if it.dupOf < 0 && it.given && r.b.dups > 0 {
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
// one append however long the log.
func (q *Queue) EnqueueBatch(ctx context.Context, b *Batch) (*BatchResult, error) {
	res := &BatchResult{Requests: b.Len(), b: b}
	if b.Len() == 0 {
		return res, nil
	}
	now := q.now().UTC()
	var slab []Event
	var ps []Proposal
	evs, err := q.updateMaybe(ctx, b.chosen, func(st *State) ([]Proposal, error) {
		res.existing = nil
		if slab == nil {
			slab = make([]Event, 0, b.Len())
			ps = make([]Proposal, 0, b.Len())
		}
		slab, ps = slab[:0], ps[:0]
		for i, it := range b.items {
			if it.dupOf >= 0 {
				continue
			}
			run := b.runBytes(it.run)
			if st != nil && it.given {
				if t := st.Task(it.id); t != nil {
					if string(t.Manifest) != string(it.manifest) || string(t.Run) != string(run) || t.MaxAttempts != int(it.max) {
						return nil, exitcode.Errorf(exitcode.Conflict, "task %s: already enqueued with a different manifest, run spec or max_attempts", it.id)
					}
					if res.existing == nil {
						res.existing = map[int32]TaskStatus{}
					}
					res.existing[int32(i)] = StatusOf(t)
					continue
				}
			}
			slab = append(slab, Event{Time: now, Type: EventEnqueued, Task: it.id, MaxAttempts: int(it.max), Manifest: it.manifest, Run: run})
			// A caller's id must not exist yet; a generated one cannot.
			ps = append(ps, Proposal{Event: &slab[len(slab)-1], Expect: 0, Any: !it.given})
		}
		return ps, nil
	})
	if err != nil {
		return nil, err
	}
	res.evs, res.Created = evs, len(evs)
	if len(evs) > 0 {
		res.FirstSeq, res.LastSeq = evs[0].Seq, evs[len(evs)-1].Seq
	}
	return res, nil
}

// idSource makes NewID's ids with randomness read in blocks, not one
// system call per id.
type idSource struct {
	buf [4000]byte
	off int
}

func (s *idSource) next() string {
	if s.off == 0 || s.off+10 > len(s.buf) {
		if _, err := rand.Read(s.buf[:]); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		s.off = 0
	}
	var r [10]byte
	copy(r[:], s.buf[s.off:])
	s.off += 10
	return idFrom(time.Now(), r)
}
