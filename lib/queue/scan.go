package queue

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// Records and snapshot lines are read with jsonx's scanner, which validates
// and decodes in one pass without allocating. The queue's policy on top of
// it: raw invalid UTF-8 is refused (no writer ever produced it: the encoder
// replaces it with U+FFFD), an escaped lone surrogate reads as U+FFFD, and
// nesting inside manifests and run specs is bounded by maxDepth.

const maxDepth = 64

func newScanner(b []byte) jsonx.Scanner {
	s := jsonx.NewScanner(b)
	s.Strings = jsonx.ReplaceSurrogates
	return s
}

// scanners keeps scanners for records and task lines between calls, so that
// their scratch buffers outlive one record: a string with escapes then costs
// no allocation to read.
var scanners = sync.Pool{New: func() any { s := newScanner(nil); return &s }}

func getScanner(b []byte) *jsonx.Scanner {
	s := scanners.Get().(*jsonx.Scanner)
	s.Reset(b)
	return s
}

func putScanner(s *jsonx.Scanner) {
	s.Reset(nil) // keep no record alive
	scanners.Put(s)
}

// asRecordError gives a scanner's syntax error the type every decoding
// failure of a record has.
func asRecordError(err error) error {
	var se *jsonx.SyntaxError
	if errors.As(err, &se) {
		return &RecordError{Why: se.Error()}
	}
	return err
}

// rawObject reads a member kept as its bytes (a manifest, a run spec),
// copied out of the input; ok is false, and nothing read, if it is not an
// object.
func rawObject(s *jsonx.Scanner) (raw json.RawMessage, ok bool, err error) {
	if s.Peek() != '{' {
		return nil, false, nil
	}
	b, err := s.Skip(maxDepth)
	return append(json.RawMessage(nil), b...), true, err
}

// optTrace reads a trace member; ok is false, and nothing read, if it is
// not an object.
func optTrace(s *jsonx.Scanner) (t *Trace, ok bool, err error) {
	if s.Peek() != '{' {
		return nil, false, nil
	}
	t, err = decodeTrace(s)
	return t, true, err
}

// parseTime reads an RFC 3339 time with the standard library: the strict
// []byte parser first (it allocates nothing for the UTC form the encoder
// writes, 2006-01-02T15:04:05.999999999Z), then time.Parse, which accepts
// the few lenient forms older readers accepted.
func parseTime(b []byte) (time.Time, bool) {
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		if t, err = time.Parse(time.RFC3339Nano, string(b)); err != nil {
			return time.Time{}, false
		}
	}
	return t.UTC(), true
}
