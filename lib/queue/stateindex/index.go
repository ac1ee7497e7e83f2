// Package stateindex keeps a durable index of a file queue's state, so that
// `artq status` answers in milliseconds over hundreds of thousands of tasks
// without replaying the log: per-state counts, and one compact row per task
// (what status shows, and what the reducer needs to apply later events to
// it), in enqueue order and searchable by id.
//
// The index is a cache, never the truth. It lives beside the log as
// state.index, is written atomically (temporary file, fsync, rename,
// directory fsync) by processes that already hold the state (compact, a
// large enqueue, a worker now and then and at exit), and is bound to the
// log it was built from: the sequence and byte offset it covers and the
// SHA-256 of the segment's first record and of the record that ends at
// that offset. A reader (Load) checks the binding and every checksum of
// what it reads, then applies the events appended after that offset
// through the one reducer (queue.State), exactly as a replay would. An
// index that is missing, damaged, of another version, from another queue
// or from before a compaction is not used: Load fails and the caller
// replays the log instead, with the same result.
//
// What it cannot tell from the bytes it reads is a log rewritten in place
// keeping those two records and that length, or an index forged
// consistently (checksums recomputed) by someone who can write the queue
// directory, who could as well rewrite the log: `artq fsck` compares the
// index with a full replay and reports any difference.
package stateindex

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// FileName is the index's name inside the queue directory.
const FileName = "state.index"

// LockName is the lock file index writers hold (flock) while they write:
// one writes at a time, and the one holding it may remove any temporary
// index file it finds (no other writer is in progress).
const LockName = "state.index.lock"

// placeholder stands for the manifest of a task loaded from the index (the
// reducer requires one; status takes the program from the row).
var placeholder = []byte("{}")

// ---- reading -------------------------------------------------------------

// View is the state an index and the log's tail after it describe. It
// reads rows from the index file on demand; Close releases it.
type View struct {
	f      *os.File
	h      *header
	states []byte
	// perm, offs and all (the whole rows section) are read and checked
	// whole (loadAll) for a list, and when a tail names many tasks: then
	// in-memory lookups beat a few dozen preads each.
	perm []uint32
	all  []byte
	offs []uint32 // read with all

	// After the tail: the tasks the tail's events touched (loaded from
	// their rows, then reduced), by row number, and the reducer that holds
	// them and the tasks the tail enqueued.
	st       *queue.State
	touched  map[uint32]*queue.Task
	programs map[string]string // program of each touched task from a row
	counts   [5]int
	total    int

	// TailEvents is how many events the log held after the index.
	TailEvents int
	end        int64 // offset just past the last unit of the tail
}

// Load opens dir's index, checks it against the log, and applies the
// events appended after it. Any error means: do not use it, replay.
func Load(ctx context.Context, dir string) (*View, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	lf, err := os.Open(filepath.Join(dir, file.LogName))
	if err != nil {
		f.Close()
		return nil, err
	}
	defer lf.Close()
	v, err := load(ctx, f, lf, -1)
	if err != nil {
		f.Close()
		return nil, err
	}
	return v, nil
}

// load is Load of the index open as f, against the log open as lf read up
// to byte limit (-1: its end).
func load(ctx context.Context, f, lf *os.File, limit int64) (*View, error) {
	v, err := loadBase(f, lf)
	if err != nil {
		return nil, err
	}
	var tail []*queue.Event
	end, _, err := file.ReadFrom(ctx, lf, v.h.offset, limit, v.h.seq, func(ev *queue.Event) error {
		tail = append(tail, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.end, v.TailEvents = end, len(tail)
	if err := v.applyTail(tail); err != nil {
		return nil, err
	}
	return v, nil
}

// loadBase reads and checks the header and the states section of the
// index open as f, and its binding to the log open as lf. The view has no
// tail applied yet.
func loadBase(f, lf *os.File) (*View, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hb := make([]byte, headerSize)
	if _, err := f.ReadAt(hb, 0); err != nil {
		return nil, damaged("header: %v", err)
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return nil, err
	}
	if fi.Size() != h.fileSize() {
		return nil, damaged("%d bytes, the header describes %d", fi.Size(), h.fileSize())
	}
	v := &View{f: f, h: h}
	if err := v.readStates(); err != nil {
		return nil, err
	}
	if err := checkBinding(lf, h); err != nil {
		return nil, err
	}
	return v, nil
}

// readStates reads and checks the states section: all a summary needs.
func (v *View) readStates() error {
	h := v.h
	states := make([]byte, h.tasks)
	if _, err := v.f.ReadAt(states, headerSize); err != nil {
		return damaged("states: %v", err)
	}
	if crc32.Checksum(states, castagnoli) != h.crcs[0] {
		return damaged("states checksum mismatch")
	}
	var counts [5]uint32
	for _, s := range states {
		if int(s) >= len(counts) {
			return damaged("state %d", s)
		}
		counts[s]++
	}
	if counts != h.counts {
		return damaged("the counts do not match the states")
	}
	v.states = states
	return nil
}

// loadAll reads the whole file after the header and checks it as a
// whole before anything of it is used: the SHA-256 digest of the sections
// (every byte), the offsets (in order, covering the rows), the perm (a
// permutation), and every row's seeded CRC and state byte. Every reader
// of more than the few rows a lookup finds comes through here (a list,
// fsck, a long tail, a writer that keeps rows): a row that fails means no
// row of this file is used, never that one is skipped.
func (v *View) loadAll() error {
	if v.all != nil {
		return nil
	}
	h := v.h
	n := int64(h.tasks)
	body := make([]byte, h.sectionsLen()+int64(h.rowsLen))
	if _, err := v.f.ReadAt(body, headerSize); err != nil {
		return damaged("body: %v", err)
	}
	if sha256.Sum256(body) != h.digest {
		return damaged("digest mismatch: the sections are not the ones the header describes")
	}
	if !bytes.Equal(body[:n], v.states) {
		return damaged("the states section changed while it was read")
	}
	offs := body[n : n+4*(n+1)]
	o := make([]uint32, n+1)
	for i := range o {
		o[i] = binary.LittleEndian.Uint32(offs[4*i:])
		if i > 0 && o[i] < o[i-1]+5 {
			return damaged("row %d: offsets out of order", i-1)
		}
	}
	if o[0] != 0 || uint64(o[n]) != h.rowsLen {
		return damaged("offsets do not cover the rows")
	}
	perm := body[n+4*(n+1) : h.sectionsLen()]
	seen := make([]bool, n)
	p := make([]uint32, n)
	for i := range n {
		x := binary.LittleEndian.Uint32(perm[4*i:])
		if int64(x) >= n || seen[x] {
			return damaged("perm is not a permutation")
		}
		seen[x] = true
		p[i] = x
	}
	rows := body[h.sectionsLen():]
	seeds := h.seeder()
	for i := range uint32(n) {
		raw := rows[o[i]:o[i+1]]
		if !rowSealed(raw, seeds.seed(i)) {
			return damaged("row %d: checksum mismatch", i)
		}
		k, m := binary.Uvarint(raw)
		if m <= 0 || k >= uint64(len(raw)-4-m) || raw[m+int(k)] != v.states[i] {
			return damaged("row %d: bad id or state", i)
		}
	}
	v.offs, v.perm, v.all = o, p, rows
	return nil
}

// checkBinding checks that the log open as lf is the one the index was
// built from: its first record and the record ending at the offset are the
// ones the header names.
func checkBinding(lf *os.File, h *header) error {
	fi, err := lf.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < h.offset {
		return damaged("the log is shorter (%d bytes) than the index covers (%d)", fi.Size(), h.offset)
	}
	for _, c := range []struct {
		off  int64
		n    uint32
		want [32]byte
		what string
	}{{0, h.firstLen, h.first, "first"}, {h.offset - int64(h.lastLen), h.lastLen, h.last, "last"}} {
		b := make([]byte, c.n)
		if _, err := lf.ReadAt(b, c.off); err != nil {
			return damaged("read the log's %s record: %v", c.what, err)
		}
		if b[len(b)-1] != '\n' || sha256.Sum256(b) != c.want {
			return damaged("the log's %s record is not the one indexed (another queue, or the log was compacted or rewritten)", c.what)
		}
	}
	return nil
}

// rowBytes returns row i's bytes (loadAll done).
func (v *View) rowBytes(i uint32) []byte { return v.all[v.offs[i]:v.offs[i+1]] }

// row decodes and checks row i.
func (v *View) row(i uint32) (*row, error) {
	r, err := decodeRow(v.rowBytes(i), v.h.rowSeed(i))
	if err != nil {
		return nil, fmt.Errorf("row %d: %w", i, err)
	}
	return r, v.checkRow(i, r)
}

// checkRow checks a decoded row against the states section and the
// header, and gives it the placeholder manifest the reducer requires.
func (v *View) checkRow(i uint32, r *row) error {
	t := &r.task
	if queue.States[v.states[i]] != t.State {
		return damaged("row %d: state %s, the states section says %s", i, t.State, queue.States[v.states[i]])
	}
	if t.EnqSeq == 0 || t.EnqSeq > t.LastSeq || t.LastSeq > v.h.seq {
		return damaged("row %d: sequences out of order", i)
	}
	t.Manifest = placeholder
	return nil
}

// lookup finds id's row by binary search over the perm section. Before a
// scan has read the tables it reads only the entries it probes (a few
// dozen small preads, not megabytes): what it finds is checked by the
// row's own CRC, seeded with this file's binding and the row's number (a
// row of another index, or another row of this one, does not pass), and
// by its id; a damaged table can only make it miss (status then confirms
// by replaying) or fail.
func (v *View) lookup(id string) (uint32, *row, error) {
	n := len(v.states)
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		p, b, err := v.probe(mid)
		if err != nil {
			return 0, nil, err
		}
		rid, ok := rowID(b)
		if !ok {
			return 0, nil, damaged("row %d: bad id", p)
		}
		switch {
		case rid == id:
			r, err := decodeRow(b, v.h.rowSeed(p))
			if err != nil {
				return 0, nil, fmt.Errorf("row %d: %w", p, err)
			}
			if err := v.checkRow(p, r); err != nil {
				return 0, nil, err
			}
			if r.task.ID != id {
				return 0, nil, damaged("row %d: id mismatch", p)
			}
			return p, r, nil
		case rid < id:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, nil, nil
}

// probe returns the row at position i of the id order, and its number.
func (v *View) probe(i int) (uint32, []byte, error) {
	if v.all != nil {
		return v.perm[i], v.rowBytes(v.perm[i]), nil
	}
	n := int64(len(v.states))
	var e [8]byte
	if _, err := v.f.ReadAt(e[:4], headerSize+n+4*(n+1)+4*int64(i)); err != nil {
		return 0, nil, damaged("perm: %v", err)
	}
	p := binary.LittleEndian.Uint32(e[:4])
	if int64(p) >= n {
		return 0, nil, damaged("perm: row %d of %d", p, n)
	}
	if _, err := v.f.ReadAt(e[:], headerSize+n+4*int64(p)); err != nil {
		return 0, nil, damaged("offsets: %v", err)
	}
	lo, hi := binary.LittleEndian.Uint32(e[:4]), binary.LittleEndian.Uint32(e[4:])
	if hi < lo+5 || uint64(hi) > v.h.rowsLen {
		return 0, nil, damaged("row %d: offsets out of range", p)
	}
	b := make([]byte, hi-lo)
	if _, err := v.f.ReadAt(b, headerSize+v.h.sectionsLen()+int64(lo)); err != nil {
		return 0, nil, damaged("row %d: %v", p, err)
	}
	return p, b, nil
}

// manyLookups is how many distinct tasks in a tail make Load read the
// whole rows section once rather than search with preads.
const manyLookups = 64

// applyTail reduces the tail's events over the tasks they concern, loaded
// from their rows: a task's state is a function of its own events, so this
// is what a whole replay would make of them.
func (v *View) applyTail(tail []*queue.Event) error {
	v.touched = map[uint32]*queue.Task{}
	v.programs = map[string]string{}
	rowOf := map[string]uint32{}
	var tasks []queue.Task
	seen := map[string]bool{}
	var ids []string
	for _, ev := range tail {
		if ev.Task != "" && !seen[ev.Task] {
			seen[ev.Task] = true
			ids = append(ids, ev.Task)
		}
	}
	if len(ids) > manyLookups {
		if err := v.loadAll(); err != nil {
			return err
		}
	}
	for _, id := range ids {
		i, r, err := v.lookup(id)
		if err != nil {
			return err
		}
		if r != nil {
			tasks = append(tasks, r.task)
			rowOf[id] = i
			v.programs[id] = r.program
		}
	}
	sort.Slice(tasks, func(a, b int) bool { return tasks[a].EnqSeq < tasks[b].EnqSeq })
	st, err := queue.NewStateFrom(&queue.Snapshot{Seq: v.h.seq, Tasks: tasks})
	if err != nil {
		return damaged("rows: %v", err)
	}
	for _, ev := range tail {
		if err := st.Apply(ev); err != nil {
			return fmt.Errorf("log seq %d: illegal event: %w", ev.Seq, err)
		}
	}
	for i := range v.counts {
		v.counts[i] = int(v.h.counts[i])
	}
	for id, i := range rowOf {
		v.counts[v.states[i]]--
		v.touched[i] = st.Task(id)
	}
	for s, n := range st.Counts() {
		v.counts[stateIndex(s)] += n
	}
	v.total = int(v.h.tasks) + st.Len() - len(rowOf)
	v.st = st
	return nil
}

// Close releases the index file.
func (v *View) Close() error { return v.f.Close() }

// Seq is the sequence of the last event the view reflects.
func (v *View) Seq() uint64 { return v.st.Seq }

// IndexSeq is the sequence the index itself covers.
func (v *View) IndexSeq() uint64 { return v.h.seq }

// Summary is what `artq status --summary` prints, as queue.SummaryOf of
// the replayed state would give it.
func (v *View) Summary() queue.Summary {
	return queue.Summary{TypeMeta: jsonx.Meta(queue.KindSummary), Seq: v.st.Seq, Total: v.total,
		Queued: v.counts[0], Running: v.counts[1], Succeeded: v.counts[2], Failed: v.counts[3], Cancelled: v.counts[4]}
}

// Task returns task id and the program status shows for it (nil when there
// is no such task). The task is the view's: do not change it.
func (v *View) Task(id string) (*queue.Task, string, error) {
	if t := v.st.Task(id); t != nil {
		if p, ok := v.programs[id]; ok {
			return t, p, nil
		}
		return t, queue.ProgramOf(t.Manifest), nil
	}
	_, r, err := v.lookup(id)
	if err != nil || r == nil {
		return nil, "", err
	}
	return &r.task, r.program, nil
}

// Tasks calls fn for every task in enqueue order (only those in state
// filter, unless it is empty) until fn returns an error, which it returns.
// It checks the whole file (loadAll) before fn sees any task: a damaged
// index fails with a *Damage before anything is printed, and the caller
// replays instead. Past that check only a row that decodes to nonsense
// (which no writer writes: a forgery) can fail, and that error is
// returned as it is, never skipped.
func (v *View) Tasks(filter queue.TaskState, fn func(t *queue.Task, program string) error) error {
	fi := -1
	if filter != "" {
		if fi = stateIndex(filter); fi < 0 {
			return fmt.Errorf("unknown state %q", filter)
		}
	}
	if err := v.loadAll(); err != nil {
		return err
	}
	var prev uint64
	for i := range uint32(len(v.states)) {
		if t, ok := v.touched[i]; ok {
			if t.EnqSeq <= prev {
				return damaged("row %d: out of enqueue order", i)
			}
			prev = t.EnqSeq
			if fi < 0 || t.State == filter {
				if err := fn(t, v.programs[t.ID]); err != nil {
					return err
				}
			}
			continue
		}
		if fi >= 0 && int(v.states[i]) != fi {
			continue
		}
		r, err := v.row(i)
		if err != nil {
			return err
		}
		if r.task.EnqSeq <= prev {
			return damaged("row %d: out of enqueue order", i)
		}
		prev = r.task.EnqSeq
		if err := fn(&r.task, r.program); err != nil {
			return err
		}
	}
	var err error
	v.st.Tasks(func(t *queue.Task) bool {
		if t.EnqSeq <= v.h.seq || (fi >= 0 && t.State != filter) {
			return true
		}
		err = fn(t, queue.ProgramOf(t.Manifest))
		return err == nil
	})
	return err
}

// copyInto adds every task of the view to enc in enqueue order: the rows
// the tail did not touch as they are stored, the others encoded anew. A
// writer refreshing the index so pays for the tail, not for decoding every
// row. It copies rows only from a file that checks whole (loadAll: the
// digest of every byte, every row's seeded CRC); one that does not fails
// with a *Damage, and the writer rebuilds from a replay instead.
func (v *View) copyInto(enc *encoder) error {
	if err := v.loadAll(); err != nil {
		return err
	}
	for i := range uint32(len(v.states)) {
		if t, ok := v.touched[i]; ok {
			if err := enc.add(t, v.programs[t.ID]); err != nil {
				return err
			}
			continue
		}
		if err := enc.addRaw(v.rowBytes(i), v.states[i]); err != nil {
			return err
		}
	}
	var err error
	v.st.Tasks(func(t *queue.Task) bool {
		if t.EnqSeq > v.h.seq {
			err = enc.add(t, queue.ProgramOf(t.Manifest))
		}
		return err == nil
	})
	return err
}
