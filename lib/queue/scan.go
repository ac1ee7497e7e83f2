package queue

import (
	"bytes"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/jsonx"
)

// scanner is a strict, single-pass JSON reader for records and snapshot
// lines: one pass both validates and decodes, member names and plain strings
// are compared without allocating, and integers are read exactly. Replay of
// a million records spends most of its time here.
type scanner struct {
	b []byte
	i int
}

const maxDepth = 64

func (s *scanner) fail(format string, args ...any) error {
	return recordErrorf(format, args...)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail("not valid JSON: want %q at byte %d", c, s.i)
	}
	s.i++
	return nil
}

// object calls member for each member of an object; member must consume the
// value. Duplicate detection is the caller's.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("not valid JSON: want , or } at byte %d", s.i)
		}
	}
}

// end checks that nothing but space follows.
func (s *scanner) end() error {
	if s.peek() != 0 {
		return s.fail("not valid JSON: trailing data at byte %d", s.i)
	}
	return nil
}

// str reads a string. The result aliases the input when it has no escapes;
// callers copy what they keep. Invalid UTF-8 and raw control characters are
// errors.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("not valid JSON: want a string at byte %d", s.i)
	}
	s.i++
	start := s.i
	q := bytes.IndexByte(s.b[start:], '"')
	if q < 0 {
		return nil, s.fail("not valid JSON: unterminated string")
	}
	seg := s.b[start : start+q]
	ascii := true
	for _, c := range seg {
		if c < 0x20 || c == '\\' {
			if c == '\\' {
				return s.escaped(start)
			}
			return nil, s.fail("not valid JSON: control character in a string")
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(seg) {
		return nil, s.fail("invalid UTF-8 in a string")
	}
	s.i = start + q + 1
	return seg, nil
}

func (s *scanner) escaped(start int) ([]byte, error) {
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(out) {
				return nil, s.fail("invalid UTF-8 in a string")
			}
			return out, nil
		case c < 0x20:
			return nil, s.fail("not valid JSON: control character in a string")
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		if b, ok := jsonx.SimpleEscape(e); ok {
			out = append(out, b)
			continue
		}
		switch e {
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("not valid JSON: bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					if r2, ok = s.hex4(); !ok {
						return nil, s.fail("not valid JSON: bad \\u escape")
					}
				}
				r = utf16.DecodeRune(r, r2) // U+FFFD when unpaired
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.fail("not valid JSON: bad escape \\%c", e)
		}
	}
	return nil, s.fail("not valid JSON: unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	r, ok := jsonx.Hex4(s.b[s.i:])
	if ok {
		s.i += 4
	}
	return r, ok
}

// uint reads a canonical unsigned integer (see parseUint).
func (s *scanner) uint() (uint64, bool) {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	return parseUint(s.b[start:s.i])
}

func (s *scanner) int64() (int64, bool) {
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	u, ok := s.uint()
	if !ok || u > 1<<63-1 || (neg && u == 0) {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

func (s *scanner) int() (int, bool) {
	n, ok := s.int64()
	if !ok || n > 1<<31-1 || n < -(1<<31) {
		return 0, false
	}
	return int(n), true
}

func (s *scanner) bool() (bool, bool) {
	switch {
	case hasPrefix(s.b[s.i:], "true"):
		s.i += 4
		return true, true
	case hasPrefix(s.b[s.i:], "false"):
		s.i += 5
		return false, true
	}
	return false, false
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// value skips one JSON value, validating it, and returns its bytes.
func (s *scanner) value(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, s.fail("JSON nested too deeply")
	}
	start := s.i
	switch c := s.peek(); {
	case c == '{':
		start = s.i
		err := s.object(func([]byte) error {
			_, err := s.value(depth + 1)
			return err
		})
		return s.b[start:s.i], err
	case c == '[':
		start = s.i
		s.i++
		if s.peek() == ']' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, s.fail("not valid JSON: want , or ] at byte %d", s.i)
			}
		}
	case c == '"':
		start = s.i
		_, err := s.str()
		return s.b[start:s.i], err
	case c == 't' || c == 'f':
		start = s.i
		if _, ok := s.bool(); !ok {
			return nil, s.fail("not valid JSON at byte %d", s.i)
		}
		return s.b[start:s.i], nil
	case c == 'n':
		if !hasPrefix(s.b[s.i:], "null") {
			return nil, s.fail("not valid JSON at byte %d", s.i)
		}
		s.i += 4
		return s.b[s.i-4 : s.i], nil
	case c == '-' || c >= '0' && c <= '9':
		start = s.i
		if !s.number() {
			return nil, s.fail("not valid JSON: bad number at byte %d", start)
		}
		return s.b[start:s.i], nil
	}
	_ = start
	return nil, s.fail("not valid JSON at byte %d", s.i)
}

// number scans a JSON number by the grammar of RFC 8259.
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// parseTime reads the RFC 3339 time the encoder writes
// (2006-01-02T15:04:05.999999999Z) without allocating, and falls back to
// time.Parse for any other RFC 3339 form.
func parseTime(b []byte) (time.Time, bool) {
	if n := len(b); n >= 20 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[n-1] == 'Z' {
		d := func(lo, hi int) (int, bool) {
			v := 0
			for _, c := range b[lo:hi] {
				if c < '0' || c > '9' {
					return 0, false
				}
				v = v*10 + int(c-'0')
			}
			return v, true
		}
		y, ok1 := d(0, 4)
		mo, ok2 := d(5, 7)
		dd, ok3 := d(8, 10)
		h, ok4 := d(11, 13)
		mi, ok5 := d(14, 16)
		sec, ok6 := d(17, 19)
		ns := 0
		ok7 := true
		if n > 20 {
			if b[19] != '.' || n-21 > 9 || n-21 < 1 {
				ok7 = false
			} else {
				ns, ok7 = d(20, n-1)
				for range 9 - (n - 21) {
					ns *= 10
				}
			}
		} else if b[19] != 'Z' {
			ok7 = false
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= daysIn(mo, y) && h < 24 && mi < 60 && sec < 60 {
			return time.Date(y, time.Month(mo), dd, h, mi, sec, ns, time.UTC), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
