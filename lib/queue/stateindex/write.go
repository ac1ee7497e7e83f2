package stateindex

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// Built is an encoded index waiting to be written: Build takes it under
// the caller's lock, Write does the I/O after.
type Built struct {
	h        header
	sections []byte   // states, offsets, perm
	rows     []byte   // the encoder's rows, as they are: not copied again
	offs     []uint32 // where each row starts, and the last one's end
}

// Seq is the sequence the index covers.
func (b *Built) Seq() uint64 { return b.h.seq }

// Build encodes st, the replay of the log through st.Seq. It fails (and
// nothing should be written) for a state the format cannot hold exactly.
func Build(st *queue.State) (*Built, error) {
	var err error
	enc := newEncoder(st.Len(), st.Len()*96)
	st.Tasks(func(t *queue.Task) bool {
		err = enc.add(t, queue.ProgramOf(t.Manifest))
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return enc.finish(st.Seq)
}

type encoder struct {
	states []byte
	offs   []uint32
	rows   []byte
	counts [5]uint32
}

// newEncoder is an encoder for n tasks whose rows are expected to take
// about rows bytes.
func newEncoder(n, rows int) *encoder {
	return &encoder{states: make([]byte, 0, n), offs: make([]uint32, 1, n+1), rows: make([]byte, 0, rows)}
}

func (e *encoder) add(t *queue.Task, program string) error {
	var err error
	if e.rows, err = appendRow(e.rows, t, program); err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	if len(e.rows) > 1<<32-1 {
		return errNotIndexable
	}
	si := stateIndex(t.State)
	e.states = append(e.states, byte(si))
	e.counts[si]++
	e.offs = append(e.offs, uint32(len(e.rows)))
	return nil
}

// addRaw adds a row as stored by an earlier index, verified whole (its
// CRC included, which Write seals again for this index's binding).
func (e *encoder) addRaw(raw []byte, state byte) error {
	e.rows = append(e.rows, raw...)
	if len(e.rows) > 1<<32-1 {
		return errNotIndexable
	}
	e.states = append(e.states, state)
	e.counts[state]++
	e.offs = append(e.offs, uint32(len(e.rows)))
	return nil
}

// addAll adds o's rows after e's.
func (e *encoder) addAll(o *encoder) error {
	base := uint32(len(e.rows))
	if uint64(len(e.rows))+uint64(len(o.rows)) > 1<<32-1 {
		return errNotIndexable
	}
	e.rows = append(e.rows, o.rows...)
	e.states = append(e.states, o.states...)
	for _, off := range o.offs[1:] {
		e.offs = append(e.offs, base+off)
	}
	for i, c := range o.counts {
		e.counts[i] += c
	}
	return nil
}

// id is the id of row i, read from the row itself (the encoder keeps no
// copy of the ids: a large index is not held twice).
func (e *encoder) id(i uint32) []byte {
	r := e.rows[e.offs[i]:e.offs[i+1]]
	n, k := binary.Uvarint(r)
	return r[k : k+int(n)]
}

func (e *encoder) finish(seq uint64) (*Built, error) {
	n := len(e.states)
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	slices.SortFunc(perm, func(a, b uint32) int { return bytes.Compare(e.id(a), e.id(b)) })
	for i := 1; i < n; i++ {
		if bytes.Equal(e.id(perm[i]), e.id(perm[i-1])) {
			return nil, fmt.Errorf("task %s twice: %w", e.id(perm[i]), errNotIndexable)
		}
	}
	b := &Built{h: header{seq: seq, tasks: uint32(n), counts: e.counts, rowsLen: uint64(len(e.rows))}}
	sec := make([]byte, 0, int(b.h.sectionsLen()))
	sec = append(sec, e.states...)
	offs := len(sec)
	for _, o := range e.offs {
		sec = binary.LittleEndian.AppendUint32(sec, o)
	}
	ps := len(sec)
	for _, p := range perm {
		sec = binary.LittleEndian.AppendUint32(sec, p)
	}
	b.h.crcs = [4]uint32{
		crc32.Checksum(sec[:offs], castagnoli), crc32.Checksum(sec[offs:ps], castagnoli),
		crc32.Checksum(sec[ps:], castagnoli), 0, // the rows': once sealed
	}
	b.sections, b.rows, b.offs = sec, e.rows, e.offs
	return b, nil
}

// seal fills in, for the binding h now holds, every row's CRC (seeded
// with the binding and the row's number), the rows section's CRC and the
// digest of all sections.
func (b *Built) seal(h *header) {
	seeds := h.seeder()
	for i := range len(b.offs) - 1 {
		sealRow(b.rows[b.offs[i]:b.offs[i+1]], seeds.seed(uint32(i)))
	}
	h.crcs[3] = crc32.Checksum(b.rows, castagnoli)
	d := sha256.New()
	d.Write(b.sections)
	d.Write(b.rows)
	d.Sum(h.digest[:0])
}

// Write binds the index to the log in dir (finding the record it covers
// near the log's end) and replaces dir/state.index atomically. It leaves
// the log alone and takes only the index writers' lock (LockName), never
// the append lock: two writers each write a correct index of their own
// point, one after the other, and the later rename wins. Holding it, it
// removes every temporary index file an interrupted writer left.
func (b *Built) Write(dir string) error {
	if b.h.seq == 0 {
		return nil // an empty queue: nothing to replay, nothing to index
	}
	lk, err := fsx.LockWait(filepath.Join(dir, LockName), file.DefaultLockTimeout)
	if err != nil {
		return fmt.Errorf("state index: %w", err)
	}
	defer lk.Unlock()
	lf, err := os.Open(filepath.Join(dir, file.LogName))
	if err != nil {
		return fmt.Errorf("state index: %w", err)
	}
	defer lf.Close()
	fi, err := lf.Stat()
	if err != nil {
		return fmt.Errorf("state index: %w", err)
	}
	start, end, err := findEnd(lf, fi.Size(), b.h.seq)
	if err != nil {
		return err
	}
	first, err := firstLine(lf, fi.Size())
	if err != nil {
		return err
	}
	last := make([]byte, end-start)
	if _, err := lf.ReadAt(last, start); err != nil {
		return fmt.Errorf("state index: read log: %w", err)
	}
	h := b.h
	h.offset, h.firstLen, h.lastLen = end, uint32(len(first)), uint32(len(last))
	h.first, h.last = sha256.Sum256(first), sha256.Sum256(last)
	b.seal(&h)
	sweep(dir)
	if err := fsx.WriteFileParts(filepath.Join(dir, FileName), fsx.FileMode, h.encode(), b.sections, b.rows); err != nil {
		return fmt.Errorf("state index: %w", err)
	}
	return nil
}

// Write builds and writes the index of st in one go (for callers whose
// state nobody else is waiting for).
func Write(dir string, st *queue.State) error {
	b, err := Build(st)
	if err != nil {
		return err
	}
	return b.Write(dir)
}

// sweep removes the temporary files interrupted writes left
// (fsx.WriteFile's "state.index<digits>"), whatever their age: its caller
// holds the index writers' lock, so none of them is another writer's in
// progress.
func sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), FileName); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// maxBack bounds how far before the log's end Write looks for the record
// it covers: writers index the state they just caught up to.
const maxBack = 256 << 20

// findEnd finds the line holding record seq, which must end a unit (a
// single record or a batch's commit), and returns where it starts and
// the offset just past its newline.
func findEnd(f *os.File, size int64, seq uint64) (start, end int64, err error) {
	for window := int64(1 << 20); ; window *= 4 {
		from := max(size-window, 0)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, fmt.Errorf("state index: read log: %w", err)
		}
		p := 0
		if from > 0 {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				if window >= maxBack {
					break
				}
				continue
			}
			p = i + 1
		}
		firstSeq := uint64(0)
		for p < len(buf) {
			i := bytes.IndexByte(buf[p:], '\n')
			if i < 0 {
				break // a torn or in-progress final line
			}
			line := buf[p : p+i]
			s, batch, commit, err := queue.RecordBatch(line)
			if err == nil {
				if firstSeq == 0 {
					firstSeq = s
				}
				if s == seq {
					if batch != 0 && !commit {
						return 0, 0, fmt.Errorf("state index: record %d does not end its batch: %w", seq, errNotIndexable)
					}
					return from + int64(p), from + int64(p+i+1), nil
				}
			}
			p += i + 1
		}
		if from == 0 || (firstSeq != 0 && firstSeq < seq) || window >= maxBack {
			break
		}
	}
	// Compacted away meanwhile, or far behind: the next write will do.
	return 0, 0, fmt.Errorf("state index: record %d is not near the end of the log", seq)
}

// firstLine returns the segment's first line, newline included.
func firstLine(f *os.File, size int64) ([]byte, error) {
	for n := int64(64 << 10); ; n *= 4 {
		buf := make([]byte, min(n, size))
		if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("state index: read log: %w", err)
		}
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i+1], nil
		}
		if n >= size {
			return nil, fmt.Errorf("state index: the log has no whole record: %w", errNotIndexable)
		}
	}
}
