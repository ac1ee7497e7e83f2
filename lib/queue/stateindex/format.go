package stateindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

// The stored form, little-endian throughout:
//
//	header   headerSize bytes (layout below), its last 4 a CRC-32C of the rest
//	states   one byte per task, in enqueue order: the state's index in queue.States
//	offsets  tasks+1 uint32: where each row starts in the rows section, and its end
//	perm     tasks uint32: row numbers ordered by task id (for binary search)
//	rows     one row per task in enqueue order (see appendRow), each ending in
//	         a CRC-32C of its own bytes seeded with the file's binding and
//	         the row's number (rowSeed)
//
// The header holds the binding to the log (the sequence and byte offset it
// covers and SHA-256 of the segment's first record and of the record that
// ends at that offset), the task count, the count per state, the length of
// the rows section, a CRC-32C of each section, and the SHA-256 of all four
// sections: a digest that depends on every byte after the header. Every
// reader checks what it reads before it uses it; nothing is trusted
// because the file says so. A reader of the whole file (a list, fsck, a
// writer that keeps rows) checks the digest; a reader of a few rows (one
// task, the tasks a short tail touches) checks each row's seeded CRC, so
// that no row of another index file, nor one moved to another place in
// this file, passes for the row it reads. A CRC over the rows section
// alone would not do: each row ends in its own CRC, and the CRC of bytes
// followed by their CRC is a constant, so such a sum depends only on the
// rows' lengths.

const (
	magic      = "ARTQSIX\x00"
	version    = 2
	headerSize = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 32 + 32 + 4 + 5*4 + 8 + 4*4 + 32 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded fixed part of the file.
type header struct {
	seq      uint64 // last sequence covered
	offset   int64  // byte offset in events.log just past record seq
	firstLen uint32 // length of the segment's first line, newline included
	lastLen  uint32 // length of the line ending at offset, newline included
	first    [32]byte
	last     [32]byte
	tasks    uint32
	counts   [5]uint32
	rowsLen  uint64
	crcs     [4]uint32 // states, offsets, perm, rows
	digest   [32]byte  // SHA-256 of the four sections, in order
}

// rowSeed is what row i's CRC starts from: a CRC-32C of the header's
// binding to the log and of i. A row copied from an index bound elsewhere
// (an older one) or moved to another row number fails its check.
func (h *header) rowSeed(i uint32) uint32 { return h.seeder().seed(i) }

// rowSeeder gives the seeds of every row of one binding without an
// allocation per row (which a 200,000-row list paid): the binding's CRC is
// computed once and continued with each row number; CRC-32C is streaming,
// so the seed equals the checksum of binding||i that rowSeed defines.
type rowSeeder struct {
	bind uint32
	buf  []byte // i, little-endian: one buffer for all the rows
}

func (h *header) seeder() *rowSeeder {
	var b [8 + 8 + 32 + 32]byte
	binary.LittleEndian.PutUint64(b[0:], h.seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.offset))
	copy(b[16:], h.first[:])
	copy(b[48:], h.last[:])
	return &rowSeeder{bind: crc32.Checksum(b[:], castagnoli), buf: make([]byte, 4)}
}

func (s *rowSeeder) seed(i uint32) uint32 {
	binary.LittleEndian.PutUint32(s.buf, i)
	return crc32.Update(s.bind, castagnoli, s.buf)
}

// rowCRC is the CRC a row's body (its bytes without the CRC) ends in.
func rowCRC(seed uint32, body []byte) uint32 { return crc32.Update(seed, castagnoli, body) }

// Damage is an index file that does not decode or does not check: a reader
// ignores the file and replays the log instead.
type Damage struct{ Why string }

func (e *Damage) Error() string { return "state index: " + e.Why }

func damaged(format string, args ...any) error {
	return &Damage{Why: fmt.Sprintf(format, args...)}
}

// errNotIndexable is a state the format cannot hold exactly (a time with a
// zone offset, a program that is not UTF-8, a trace nested twice): such a
// queue has no index and status replays it.
var errNotIndexable = errors.New("state cannot be indexed exactly")

func (h *header) sectionsLen() int64 {
	return int64(h.tasks) + 4*int64(h.tasks+1) + 4*int64(h.tasks)
}

func (h *header) fileSize() int64 { return headerSize + h.sectionsLen() + int64(h.rowsLen) }

func (h *header) encode() []byte {
	b := make([]byte, 0, headerSize)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint32(b, headerSize)
	b = binary.LittleEndian.AppendUint64(b, h.seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.offset))
	b = binary.LittleEndian.AppendUint32(b, h.firstLen)
	b = binary.LittleEndian.AppendUint32(b, h.lastLen)
	b = append(b, h.first[:]...)
	b = append(b, h.last[:]...)
	b = binary.LittleEndian.AppendUint32(b, h.tasks)
	for _, c := range h.counts {
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	b = binary.LittleEndian.AppendUint64(b, h.rowsLen)
	for _, c := range h.crcs {
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	b = append(b, h.digest[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeHeader(b []byte) (*header, error) {
	if len(b) < headerSize {
		return nil, damaged("header: %d bytes, want %d", len(b), headerSize)
	}
	b = b[:headerSize]
	if string(b[:8]) != magic {
		return nil, damaged("not a state index (bad magic)")
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != version {
		return nil, damaged("version %d, this artq reads %d", v, version)
	}
	if n := le.Uint32(b[12:]); n != headerSize {
		return nil, damaged("header size %d, want %d", n, headerSize)
	}
	if got, want := crc32.Checksum(b[:headerSize-4], castagnoli), le.Uint32(b[headerSize-4:]); got != want {
		return nil, damaged("header checksum mismatch")
	}
	h := &header{}
	p := 16
	h.seq = le.Uint64(b[p:])
	h.offset = int64(le.Uint64(b[p+8:]))
	h.firstLen = le.Uint32(b[p+16:])
	h.lastLen = le.Uint32(b[p+20:])
	p += 24
	copy(h.first[:], b[p:])
	copy(h.last[:], b[p+32:])
	p += 64
	h.tasks = le.Uint32(b[p:])
	p += 4
	var sum uint64
	for i := range h.counts {
		h.counts[i] = le.Uint32(b[p:])
		sum += uint64(h.counts[i])
		p += 4
	}
	h.rowsLen = le.Uint64(b[p:])
	p += 8
	for i := range h.crcs {
		h.crcs[i] = le.Uint32(b[p:])
		p += 4
	}
	copy(h.digest[:], b[p:])
	switch {
	case h.seq == 0 || h.offset <= 0 || h.firstLen == 0 || h.lastLen == 0:
		return nil, damaged("header: no log position")
	case int64(h.lastLen) > h.offset || int64(h.firstLen) > h.offset:
		return nil, damaged("header: record lengths exceed the offset")
	case sum != uint64(h.tasks):
		return nil, damaged("header: counts add up to %d, not %d tasks", sum, h.tasks)
	case h.rowsLen > math.MaxUint32 || h.tasks > 1<<28:
		return nil, damaged("header: sizes out of range")
	}
	return h, nil
}

// ---- rows ----------------------------------------------------------------

const (
	flagCancel   = 1 << 0
	flagLast     = 1 << 1
	flagTraceCur = 1 << 2 // the current attempt's trace is Last

	traceTruncated  = 1 << 0
	traceIncomplete = 1 << 1
	traceSavedSet   = 1 << 2
	traceSavedTrue  = 1 << 3
	traceAccept     = 1 << 4
)

// row is one task as the index holds it: the reducer's task without its
// manifest and run spec, plus the program status shows.
type row struct {
	task    queue.Task
	program string
}

func stateIndex(s queue.TaskState) int {
	for i, st := range queue.States {
		if st == s {
			return i
		}
	}
	return -1
}

// appendRow encodes t (with its program) and room for its CRC, which
// sealRow fills in once the row's number and the index's binding are
// known; or errNotIndexable.
func appendRow(dst []byte, t *queue.Task, program string) ([]byte, error) {
	si := stateIndex(t.State)
	if si < 0 || !utf8.ValidString(program) {
		return dst, errNotIndexable
	}
	if t.Trace != nil && !sameTrace(t.Trace, t.Last) {
		return dst, errNotIndexable
	}
	dst = appendStr(dst, t.ID)
	dst = append(dst, byte(si))
	var flags byte
	if t.CancelRequested {
		flags |= flagCancel
	}
	if t.Last != nil {
		flags |= flagLast
	}
	if t.Trace != nil {
		flags |= flagTraceCur
	}
	dst = append(dst, flags)
	for _, v := range []int{t.Attempt, t.Attempts, t.MaxAttempts, t.LastAttempt} {
		dst = binary.AppendVarint(dst, int64(v))
	}
	dst = binary.AppendUvarint(dst, t.Claim)
	dst = binary.AppendUvarint(dst, t.EnqSeq)
	dst = binary.AppendUvarint(dst, t.LastSeq)
	var err error
	if dst, err = appendTime(dst, t.CreatedAt); err != nil {
		return dst, err
	}
	if dst, err = appendTime(dst, t.UpdatedAt); err != nil {
		return dst, err
	}
	dst = appendStr(dst, program)
	dst = appendStr(dst, t.Worker)
	if t.Last != nil {
		if dst, err = appendTrace(dst, t.Last, true); err != nil {
			return dst, err
		}
	}
	return binary.LittleEndian.AppendUint32(dst, 0), nil
}

// sealRow writes the CRC at the end of row (its bytes, CRC included)
// from seed (header.rowSeed).
func sealRow(row []byte, seed uint32) {
	body := row[:len(row)-4]
	binary.LittleEndian.PutUint32(row[len(body):], rowCRC(seed, body))
}

// rowSealed reports whether row (CRC included) ends in its CRC from seed.
func rowSealed(row []byte, seed uint32) bool {
	body := row[:len(row)-4]
	return rowCRC(seed, body) == binary.LittleEndian.Uint32(row[len(body):])
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendTime keeps an instant exactly: seconds and nanoseconds. Only UTC
// times are indexed (artq writes nothing else), so a decoded time prints
// as the replayed one does.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	if _, off := t.Zone(); off != 0 {
		return dst, errNotIndexable
	}
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond())), nil
}

func appendTrace(dst []byte, tr *queue.Trace, outer bool) ([]byte, error) {
	dst = appendStr(dst, string(tr.Status))
	dst = binary.AppendVarint(dst, int64(tr.ExitCode))
	dst = appendStr(dst, tr.Signal)
	dst = binary.AppendVarint(dst, tr.DurationMS)
	dst = binary.AppendVarint(dst, tr.OutputBytes)
	var f byte
	if tr.OutputTruncated {
		f |= traceTruncated
	}
	if tr.OutputIncomplete {
		f |= traceIncomplete
	}
	if tr.OutputSaved != nil {
		f |= traceSavedSet
		if *tr.OutputSaved {
			f |= traceSavedTrue
		}
	}
	if tr.Acceptance != nil {
		if !outer {
			return dst, errNotIndexable
		}
		f |= traceAccept
	}
	dst = append(dst, f)
	dst = appendStr(dst, tr.Reason)
	dst = appendStr(dst, tr.OutputError)
	if tr.Acceptance != nil {
		return appendTrace(dst, tr.Acceptance, false)
	}
	return dst, nil
}

// rowDecoder reads one row; the first error sticks.
type rowDecoder struct {
	b   []byte
	err error
}

func (d *rowDecoder) fail(what string) {
	if d.err == nil {
		d.err = damaged("row: bad %s", what)
	}
}

func (d *rowDecoder) uvarint(what string) uint64 { return next(d, what, binary.Uvarint) }

func (d *rowDecoder) varint(what string) int64 { return next(d, what, binary.Varint) }

// next reads one varint of the row with read (binary.Uvarint or Varint);
// after the first failure every read is 0 and the error names the first.
func next[T uint64 | int64](d *rowDecoder, what string, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *rowDecoder) int(what string) int {
	v := d.varint(what)
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(what)
		return 0
	}
	return int(v)
}

func (d *rowDecoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *rowDecoder) str(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *rowDecoder) time(what string) time.Time {
	sec := d.varint(what)
	ns := d.uvarint(what)
	if ns >= 1e9 {
		d.fail(what)
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(ns)).UTC()
}

func (d *rowDecoder) trace(outer bool) *queue.Trace {
	tr := &queue.Trace{}
	tr.Status = execx.Status(d.str("trace status"))
	tr.ExitCode = d.int("trace exit code")
	tr.Signal = d.str("trace signal")
	tr.DurationMS = d.varint("trace duration")
	tr.OutputBytes = d.varint("trace output bytes")
	f := d.byte("trace flags")
	tr.OutputTruncated = f&traceTruncated != 0
	tr.OutputIncomplete = f&traceIncomplete != 0
	if f&traceSavedSet != 0 {
		v := f&traceSavedTrue != 0
		tr.OutputSaved = &v
	} else if f&traceSavedTrue != 0 {
		d.fail("trace flags")
	}
	tr.Reason = d.str("trace reason")
	tr.OutputError = d.str("trace output error")
	if f&^(traceTruncated|traceIncomplete|traceSavedSet|traceSavedTrue|traceAccept) != 0 {
		d.fail("trace flags")
	}
	if f&traceAccept != 0 {
		if !outer {
			d.fail("trace nesting")
			return tr
		}
		tr.Acceptance = d.trace(false)
	}
	return tr
}

// decodeRow decodes and checks one row (its bytes include the CRC, from
// seed: header.rowSeed).
func decodeRow(b []byte, seed uint32) (*row, error) {
	if len(b) < 5 {
		return nil, damaged("row: too short")
	}
	body := b[:len(b)-4]
	if !rowSealed(b, seed) {
		return nil, damaged("row: checksum mismatch")
	}
	d := &rowDecoder{b: body}
	r := &row{}
	t := &r.task
	t.ID = d.str("id")
	si := d.byte("state")
	flags := d.byte("flags")
	t.Attempt = d.int("attempt")
	t.Attempts = d.int("attempts")
	t.MaxAttempts = d.int("max_attempts")
	t.LastAttempt = d.int("last_attempt")
	t.Claim = d.uvarint("claim")
	t.EnqSeq = d.uvarint("enq_seq")
	t.LastSeq = d.uvarint("last_seq")
	t.CreatedAt = d.time("created")
	t.UpdatedAt = d.time("updated")
	r.program = d.str("program")
	t.Worker = d.str("worker")
	if d.err == nil && flags&flagLast != 0 {
		t.Last = d.trace(true)
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.b) != 0:
		return nil, damaged("row: %d bytes left over", len(d.b))
	case int(si) >= len(queue.States):
		return nil, damaged("row: state %d", si)
	case flags&^(flagCancel|flagLast|flagTraceCur) != 0:
		return nil, damaged("row: flags %#x", flags)
	case flags&flagTraceCur != 0 && t.Last == nil:
		return nil, damaged("row: a current trace without a last one")
	}
	t.State = queue.States[si]
	t.CancelRequested = flags&flagCancel != 0
	if flags&flagTraceCur != 0 {
		t.Trace = t.Last
	}
	return r, nil
}

// rowID is the id at the start of a row, for binary search, without
// decoding the rest.
func rowID(b []byte) (string, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", false
	}
	return string(b[k : k+int(n)]), true
}

// sameTrace reports whether a and b hold the same trace (the reducer keeps
// one for both the current and the last trace; a snapshot decodes two).
func sameTrace(a, b *queue.Trace) bool {
	if a == nil || b == nil {
		return a == b
	}
	if (a.OutputSaved == nil) != (b.OutputSaved == nil) || a.OutputSaved != nil && *a.OutputSaved != *b.OutputSaved {
		return false
	}
	x, y := *a, *b
	x.OutputSaved, y.OutputSaved, x.Acceptance, y.Acceptance = nil, nil, nil, nil
	return x == y && sameTrace(a.Acceptance, b.Acceptance)
}
