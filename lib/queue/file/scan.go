package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/queue"
)

// maxRecord bounds one record: a manifest at its limit plus the event's own
// fields. A longer line cannot have been written by a writer and is damage.
const maxRecord = queue.MaxManifestBytes + 64<<10

// lineBefore returns the line that ends just before offset end (end is the
// offset of its '\n', or of the end of a fragment), reading backwards.
func lineBefore(f *os.File, end int64) (start int64, line []byte, err error) {
	window := int64(4 << 10)
	for {
		from := max(end-window, 0)
		buf := make([]byte, end-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return from + int64(i) + 1, buf[i+1:], nil
		}
		if from == 0 {
			return 0, buf, nil
		}
		if window > maxRecord {
			return from, buf, nil // longer than any record: damage
		}
		window *= 4
	}
}

// tailSeq is the sequence of the last whole unit of a log file of the
// given size, read from its end without reading the whole file; ok is
// false when the file holds none. A torn final line is skipped, and so is
// a batch still without its commit (being written, or left by a crash).
// A damaged complete line is corruption.
func tailSeq(f *os.File, path string, size int64) (seq uint64, ok bool, err error) {
	if size == 0 {
		return 0, false, nil
	}
	lineEnd := size // end of the line to examine (offset of its '\n' or EOF)
	one := []byte{0}
	if _, err := f.ReadAt(one, size-1); err != nil {
		return 0, false, err
	}
	if one[0] == '\n' {
		lineEnd = size - 1
	}
	start, line, err := lineBefore(f, lineEnd)
	if err != nil {
		return 0, false, err
	}
	if lineEnd == size { // a fragment without newline
		if why := fragmentDamage(line, int64(len(line)) > maxRecord); why != "" {
			return 0, false, &queue.CorruptError{Path: path, Offset: start, Why: why}
		}
		if start == 0 {
			return 0, false, nil
		}
		if start, line, err = lineBefore(f, start-1); err != nil {
			return 0, false, err
		}
	}
	s, batch, commit, derr := queue.RecordBatch(line)
	if derr != nil {
		return 0, false, &queue.CorruptError{Path: path, Offset: start, Why: derr.Error(), Err: derr}
	}
	if batch != 0 && !commit {
		return batch - 1, batch > 1, nil
	}
	return s, true, nil
}

// A unit is what one append leaves in the log and what readers apply as
// one: a single record, or a batch (records that name the batch's first
// sequence, the last of them marked commit).

// tornError says the log ends with what a crash in the middle of an append
// leaves: an incomplete final line, or a batch without its commit. It
// starts at Offset; a writer cuts it (holding the lock, no append can be
// in progress), a reader stops before it.
type tornError struct {
	Offset int64
	Why    string
}

func (e *tornError) Error() string { return fmt.Sprintf("torn at byte %d: %s", e.Offset, e.Why) }

// walker reads a log forward unit by unit, checking every record's CRC,
// sequence continuity and batch structure. It decodes in full the records
// want says (nil: all of them), given each record's sequence and the first
// sequence of its unit; of the others it reads only what RecordBatch reads
// and returns events holding Seq, Batch and Commit only (Type empty).
//
// It allocates nothing per record it only checks: those events share one
// buffer, and a single-record unit is returned in a slice the walker
// reuses, so callers keep the events they want, never evs itself.
type walker struct {
	rd   *fsx.LineReader
	path string
	want func(seq, unit uint64) bool
	prev uint64 // sequence of the last record read; 0: none yet
	// The open batch.
	open []*queue.Event
	boff int64
	one  [1]*queue.Event
	// cheapEvs holds the checked-only events of the current unit.
	cheapEvs []queue.Event
	// checkOnly: the caller reads no events, only where units end and
	// their last sequence. A batch is then held as its first and latest
	// events (a writer checking a segment with a 100,000-task batch holds
	// two events, not 100,000).
	checkOnly bool
}

// cheap is a walker's want that decodes nothing it need not.
func cheap(seq, unit uint64) bool { return false }

// next returns the events of the next whole unit, the offset of its first
// record, and the offset just past it. At a clean end it returns io.EOF;
// at a torn end a *tornError; damage is a *queue.CorruptError.
func (w *walker) next() (evs []*queue.Event, start, end int64, err error) {
	for {
		line, off, complete, err := w.rd.Next()
		if err == io.EOF {
			if len(w.open) > 0 {
				return nil, 0, 0, &tornError{Offset: w.boff, Why: fmt.Sprintf("a batch from seq %d without its commit", w.open[0].Batch)}
			}
			return nil, 0, 0, io.EOF
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if !complete {
			if why := fragmentDamage(line, w.rd.Overlong()); why != "" {
				return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Why: why}
			}
			at := off
			if len(w.open) > 0 {
				at = w.boff
			}
			return nil, 0, 0, &tornError{Offset: at, Why: "an incomplete final line"}
		}
		ev, derr := w.decode(line)
		if derr != nil {
			return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Why: derr.Error(), Err: derr}
		}
		if w.prev != 0 && ev.Seq != w.prev+1 {
			return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Seq: ev.Seq, Why: fmt.Sprintf("sequence %d follows %d", ev.Seq, w.prev)}
		}
		w.prev = ev.Seq
		switch {
		case ev.Batch == 0 && len(w.open) > 0:
			return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Seq: ev.Seq, Why: fmt.Sprintf("an event outside the batch from seq %d before its commit", w.open[0].Batch)}
		case ev.Batch == 0:
			w.one[0] = ev
			w.cheapEvs = w.cheapEvs[:0]
			return w.one[:], off, w.rd.Offset(), nil
		case len(w.open) == 0 && ev.Batch != ev.Seq:
			return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Seq: ev.Seq, Why: fmt.Sprintf("a member of the batch from seq %d without its first event", ev.Batch)}
		case len(w.open) > 0 && ev.Batch != w.open[0].Batch:
			return nil, 0, 0, &queue.CorruptError{Path: w.path, Offset: off, Seq: ev.Seq, Why: fmt.Sprintf("a member of batch %d inside batch %d", ev.Batch, w.open[0].Batch)}
		}
		if len(w.open) == 0 {
			w.boff = off
		}
		if w.checkOnly && len(w.open) == 2 {
			w.open = w.open[:1]
		}
		w.open = append(w.open, ev)
		if ev.Commit {
			evs, start = w.open, w.boff
			w.open = w.open[:0]
			w.cheapEvs = w.cheapEvs[:0]
			return evs, start, w.rd.Offset(), nil
		}
	}
}

func (w *walker) decode(line []byte) (*queue.Event, error) {
	if w.want == nil {
		return queue.DecodeRecord(line)
	}
	seq, batch, commit, err := queue.RecordBatch(line)
	if err != nil {
		return nil, err
	}
	unit := seq
	if batch != 0 {
		unit = batch
	}
	if w.want(seq, unit) {
		return queue.DecodeRecord(line)
	}
	if w.checkOnly && len(w.cheapEvs) == 2 {
		// Only a unit's first and latest events are kept: the latest
		// takes the place of the one before it.
		w.cheapEvs[1] = queue.Event{Seq: seq, Batch: batch, Commit: commit}
		return &w.cheapEvs[1], nil
	}
	if len(w.cheapEvs) == cap(w.cheapEvs) {
		// A new backing array: the events already handed out in this
		// unit keep pointing into the old one.
		w.cheapEvs = make([]queue.Event, 0, max(8, 2*cap(w.cheapEvs)))
	}
	w.cheapEvs = append(w.cheapEvs, queue.Event{Seq: seq, Batch: batch, Commit: commit})
	return &w.cheapEvs[len(w.cheapEvs)-1], nil
}

// fragmentDamage says why a final line without a newline cannot be a torn
// append, or "" if it can. A crash mid-append leaves a prefix of records
// each followed by its newline, so a fragment that is a whole, valid record
// followed by one more byte is a record whose newline was damaged, and a
// fragment longer than any record is damage too: both are corruption, and
// cutting them would drop an acknowledged record.
func fragmentDamage(line []byte, overlong bool) string {
	if overlong {
		return "a line longer than any record"
	}
	if n := len(line); n > 1 {
		if _, err := queue.DecodeRecord(line[:n-1]); err == nil {
			return "a complete record whose newline is damaged"
		}
	}
	return ""
}
