package file

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/art-runtime/art/lib/queue"
)

// maxRecord bounds one record: a manifest at its limit plus the event's own
// fields. A longer line cannot have been written by a writer and is damage.
const maxRecord = queue.MaxManifestBytes + 64<<10

// lineScanner reads '\n'-terminated lines from a file with ReadAt, so it
// never disturbs the descriptor's offset (the writer's descriptor is opened
// O_APPEND and may be scanned too).
type lineScanner struct {
	f     *os.File
	base  int64 // file offset of buf[0]
	buf   []byte
	r, w  int   // buf[r:w] is read but not yet returned
	limit int64 // stop at this offset; -1: at EOF
	eof   bool
	// overlong is set when a line outgrew any record: the scanner stops
	// there and callers report corruption at that line.
	overlong bool
}

func newScanner(f *os.File, off, limit int64) *lineScanner {
	return &lineScanner{f: f, base: off, buf: make([]byte, 1<<20), limit: limit}
}

// next returns the next line (without its newline) and its offset. complete
// is false for a final fragment with no newline. io.EOF at the end.
func (s *lineScanner) next() (line []byte, off int64, complete bool, err error) {
	for {
		if i := bytes.IndexByte(s.buf[s.r:s.w], '\n'); i >= 0 {
			line = s.buf[s.r : s.r+i]
			off = s.base + int64(s.r)
			s.r += i + 1
			return line, off, true, nil
		}
		if s.eof {
			if s.r < s.w {
				line, off = s.buf[s.r:s.w], s.base+int64(s.r)
				s.r = s.w
				return line, off, false, nil
			}
			return nil, 0, false, io.EOF
		}
		if err := s.fill(); err != nil {
			return nil, 0, false, err
		}
	}
}

// more reports whether anything follows what has been returned so far.
func (s *lineScanner) more() (bool, error) {
	for s.r == s.w && !s.eof {
		if err := s.fill(); err != nil {
			return false, err
		}
	}
	return s.r < s.w, nil
}

// offset is the file offset just past the last line returned.
func (s *lineScanner) offset() int64 { return s.base + int64(s.r) }

func (s *lineScanner) fill() error {
	if s.r > 0 {
		n := copy(s.buf, s.buf[s.r:s.w])
		s.base += int64(s.r)
		s.r, s.w = 0, n
	}
	if s.w == len(s.buf) {
		if len(s.buf) > maxRecord {
			// A line longer than any record: hand it out as a fragment so
			// the caller reports it where it starts.
			s.eof, s.overlong = true, true
			return nil
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.w])
		s.buf = nb
	}
	want := len(s.buf) - s.w
	at := s.base + int64(s.w)
	if s.limit >= 0 {
		if left := s.limit - at; left < int64(want) {
			want = int(max(left, 0))
		}
		if want == 0 {
			s.eof = true
			return nil
		}
	}
	n, err := s.f.ReadAt(s.buf[s.w:s.w+want], at)
	s.w += n
	if errors.Is(err, io.EOF) || n == 0 {
		s.eof = true
		return nil
	}
	return err
}

// lineBefore returns the line that ends just before offset end (end is the
// offset of its '\n', or of the end of a fragment), reading backwards.
func lineBefore(f *os.File, end int64) (start int64, line []byte, err error) {
	window := int64(64 << 10)
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

// tail describes the end of a log file as a writer needs it.
type tail struct {
	end  int64        // offset just past the last good record
	last *queue.Event // the last good record, nil if none
	torn *queue.TornTail
}

// scanTail finds the last good record of a file of the given size from its
// end, without reading the whole file. A bad or incomplete last line is a
// torn tail; a bad line before it is corruption.
func scanTail(f *os.File, path string, size int64) (tail, error) {
	if size == 0 {
		return tail{}, nil
	}
	var t tail
	lineEnd := size // end of the line to examine (offset of its '\n' or EOF)
	one := []byte{0}
	if _, err := f.ReadAt(one, size-1); err != nil {
		return t, err
	}
	if one[0] == '\n' {
		lineEnd = size - 1
	}
	start, line, err := lineBefore(f, lineEnd)
	if err != nil {
		return t, err
	}
	if lineEnd == size { // a fragment without newline: torn
		t.torn = &queue.TornTail{Offset: start, Bytes: size - start}
	} else if ev, derr := queue.DecodeRecord(line); derr == nil {
		t.end, t.last = size, ev
		return t, nil
	} else {
		t.torn = &queue.TornTail{Offset: start, Bytes: size - start}
	}
	if start == 0 {
		return t, nil
	}
	pstart, pline, err := lineBefore(f, start-1)
	if err != nil {
		return t, err
	}
	ev, derr := queue.DecodeRecord(pline)
	if derr != nil {
		return t, &queue.CorruptError{Path: path, Offset: pstart, Why: derr.Error(), Err: derr}
	}
	t.end, t.last = start, ev
	return t, nil
}
