package jsonx

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner is art's one JSON tokenizer: a strict, single-pass reader over a
// byte slice that validates and decodes in the same pass. Member names and
// strings without escapes alias the input and strings with escapes are
// decoded into a scratch buffer the scanner reuses, so reading a document
// allocates nothing of its own; integers are read exactly. Everything that
// reads JSON by hand in art stands on it: the queue's record codec (replay of
// a million records spends most of its time here), Parse (which adds paths,
// maps and the number rules of RFC 8785) and Check (which adds the Go type).
//
// Errors are *SyntaxError, which carry a kind and an offset so that each
// reader can word them its own way; their Error text is the terse one the
// queue's records have always reported.
type Scanner struct {
	b []byte
	i int
	// Strings is what String does with invalid UTF-8 and lone surrogates.
	Strings StringMode
	buf     []byte // scratch for unescaped strings, reused
	kbuf    []byte // the same for member names, so a key outlives its value's strings
}

// StringMode is a policy for the two ways a JSON string can fail to be
// Unicode: raw bytes that are not UTF-8, and \u escapes of a lone
// surrogate.
type StringMode uint8

const (
	// StrictStrings refuses both (RFC 8785, I-JSON).
	StrictStrings StringMode = iota
	// ReplaceSurrogates refuses invalid UTF-8 but reads a lone surrogate
	// escape as U+FFFD: the queue's records, whose writer never produces
	// either.
	ReplaceSurrogates
	// ReplaceInvalid reads both as U+FFFD, as encoding/json does.
	ReplaceInvalid
	// KeepInvalid keeps invalid bytes as they are and a lone surrogate as
	// its 3-byte WTF-8 form, so that a caller can recognise binary data.
	KeepInvalid
)

// NewScanner returns a scanner at the start of b, with StrictStrings.
func NewScanner(b []byte) Scanner { return Scanner{b: b} }

// Reset points the scanner at the start of b, keeping its scratch buffer
// and string mode.
func (s *Scanner) Reset(b []byte) { s.b, s.i = b, 0 }

// Offset is the index of the next unread byte.
func (s *Scanner) Offset() int { return s.i }

// Data is the slice being scanned.
func (s *Scanner) Data() []byte { return s.b }

// SyntaxKind says what a SyntaxError found.
type SyntaxKind uint8

const (
	ErrWant          SyntaxKind = iota + 1 // Char was wanted at Offset (':' '{' …)
	ErrWantString                          // a string was wanted at Offset
	ErrObjectNext                          // ',' or '}' was wanted
	ErrArrayNext                           // ',' or ']' was wanted
	ErrValue                               // no value starts at Offset (Char: the byte)
	ErrLiteral                             // a literal is misspelled (Char: its first letter)
	ErrNumber                              // bad number: Char is 0 (no digits), '.' or 'e' (no digits after it)
	ErrUnterminated                        // a string has no closing quote
	ErrControl                             // a raw control character in a string
	ErrInvalidUTF8                         // invalid UTF-8 in a string
	ErrEscape                              // an unknown escape (Char: the letter after '\')
	ErrUnicodeEscape                       // a \u escape without four hex digits
	ErrLoneSurrogate                       // a \u escape of a lone surrogate (Char: its code)
	ErrDepth                               // nesting beyond the bound
	ErrTrailing                            // data after the value
)

// SyntaxError is a place where the input is not (the accepted form of) JSON.
type SyntaxError struct {
	Kind   SyntaxKind
	Offset int  // the byte at which the problem is
	Char   rune // the byte or code point involved, for the kinds that have one
	End    bool // the input ended there
}

func (e *SyntaxError) Error() string {
	switch e.Kind {
	case ErrWant:
		return fmt.Sprintf("not valid JSON: want %q at byte %d", e.Char, e.Offset)
	case ErrWantString:
		return fmt.Sprintf("not valid JSON: want a string at byte %d", e.Offset)
	case ErrObjectNext:
		return fmt.Sprintf("not valid JSON: want , or } at byte %d", e.Offset)
	case ErrArrayNext:
		return fmt.Sprintf("not valid JSON: want , or ] at byte %d", e.Offset)
	case ErrNumber:
		return fmt.Sprintf("not valid JSON: bad number at byte %d", e.Offset)
	case ErrUnterminated:
		return "not valid JSON: unterminated string"
	case ErrControl:
		return "not valid JSON: control character in a string"
	case ErrInvalidUTF8:
		return "invalid UTF-8 in a string"
	case ErrEscape:
		return fmt.Sprintf("not valid JSON: bad escape \\%c", e.Char)
	case ErrUnicodeEscape:
		return "not valid JSON: bad \\u escape"
	case ErrLoneSurrogate:
		return fmt.Sprintf("not valid JSON: lone surrogate \\u%04x", e.Char)
	case ErrDepth:
		return "JSON nested too deeply"
	case ErrTrailing:
		return fmt.Sprintf("not valid JSON: trailing data at byte %d", e.Offset)
	}
	return fmt.Sprintf("not valid JSON at byte %d", e.Offset)
}

func (s *Scanner) fail(k SyntaxKind, at int, c rune) error {
	return &SyntaxError{Kind: k, Offset: at, Char: c, End: at >= len(s.b)}
}

// Space skips white space.
func (s *Scanner) Space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek skips white space and returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	// The common case (no space: the records art writes have none) small
	// enough to inline.
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	return s.peekSpace()
}

func (s *Scanner) peekSpace() byte {
	s.Space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Expect consumes c after white space.
func (s *Scanner) Expect(c byte) error {
	if s.Peek() == c && s.i < len(s.b) {
		s.i++
		return nil
	}
	return s.fail(ErrWant, s.i, rune(c))
}

// Object reads an object, calling member for each member with the scanner
// at its value (white space skipped); member must consume the value. The key
// is valid until the next member of any object (it survives the strings of
// its own value). Duplicate detection is the caller's. Readers that must
// look at a key before its ':' use Expect('{'), NextMember, Key and
// Expect(':') themselves.
func (s *Scanner) Object(member func(key []byte) error) error {
	// This is NextMember, Key and Expect(':') written out: replay spends
	// its time in this loop.
	if err := s.Expect('{'); err != nil {
		return err
	}
	if s.Peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.Peek() != '"' {
			return s.fail(ErrWantString, s.i, 0)
		}
		key, err := s.str(&s.kbuf)
		if err != nil {
			return err
		}
		if s.Peek() != ':' || s.i >= len(s.b) {
			return s.fail(ErrWant, s.i, ':')
		}
		s.i++
		s.Space()
		if err := member(key); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail(ErrObjectNext, s.i, 0)
		}
	}
}

// NextMember is called before the member numbered n of an object whose '{'
// was read: it consumes the ',' before it (n > 0), or the closing '}' and
// returns false.
func (s *Scanner) NextMember(n int) (bool, error) { return s.next(n, '}', ErrObjectNext) }

// NextItem is NextMember for an array whose '[' was read.
func (s *Scanner) NextItem(n int) (bool, error) { return s.next(n, ']', ErrArrayNext) }

func (s *Scanner) next(n int, end byte, k SyntaxKind) (bool, error) {
	c := s.Peek()
	switch {
	case c == end && s.i < len(s.b):
		s.i++
		return false, nil
	case n == 0:
		return true, nil
	case c == ',':
		s.i++
		s.Space()
		return true, nil
	}
	return false, s.fail(k, s.i, 0)
}

// Key reads a member name. It is decoded into a scratch buffer of its own,
// so it stays valid while the member's value is read (until the next Key).
func (s *Scanner) Key() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.fail(ErrWantString, s.i, 0)
	}
	return s.str(&s.kbuf)
}

// Array reads an array, calling elem for each item (the scanner at it, white
// space skipped) with its index; elem must consume the item.
func (s *Scanner) Array(elem func(i int) error) error {
	if err := s.Expect('['); err != nil {
		return err
	}
	for n := 0; ; n++ {
		more, err := s.NextItem(n)
		if err != nil || !more {
			return err
		}
		if err := elem(n); err != nil {
			return err
		}
	}
}

// End checks that nothing but white space follows.
func (s *Scanner) End() error {
	s.Space()
	if s.i < len(s.b) {
		return s.fail(ErrTrailing, s.i, 0)
	}
	return nil
}

// String reads a string after white space. The result aliases the input
// when the string has no escapes (and needs no replacement), else the
// scanner's scratch buffer; either way it is valid until the next String:
// callers copy what they keep. Raw control characters are errors; invalid
// UTF-8 and lone surrogates are dealt with as s.Strings says.
func (s *Scanner) String() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.fail(ErrWantString, s.i, 0)
	}
	return s.str(&s.buf)
}

// str reads the string at s.i (its opening quote), unescaping into scratch.
func (s *Scanner) str(scratch *[]byte) ([]byte, error) {
	s.i++
	start := s.i
	q := bytes.IndexByte(s.b[start:], '"')
	if q < 0 {
		q = len(s.b) - start // no closing quote: the slow path says where it fails
	}
	seg := s.b[start : start+q]
	var class byte
	for _, c := range seg {
		class |= strClass[c]
	}
	if class&strEscape != 0 {
		return s.slowString(start, q, scratch)
	}
	ascii := class&strMulti == 0
	if start+q == len(s.b) {
		return s.slowString(start, q, scratch)
	}
	if !ascii && s.Strings != KeepInvalid && !utf8.Valid(seg) {
		return s.slowString(start, q, scratch)
	}
	s.i = start + q + 1
	return seg, nil
}

// strClass sorts string bytes for the reader's and the writer's fast paths:
// strEscape for what is escaped in a JSON string (a quote, a backslash, a
// control character), strMulti for the bytes of multi-byte UTF-8 (which get
// validated).
var strClass = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = strEscape
	}
	t['\\'] = strEscape
	t['"'] = strEscape
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = strMulti
	}
	return t
}()

const (
	strEscape = 1 << iota
	strMulti
)

// slowString decodes the string whose body starts at start, and whose
// raw form is likely n bytes long, into the scratch buffer.
func (s *Scanner) slowString(start, n int, scratch *[]byte) ([]byte, error) {
	s.i = start
	out := (*scratch)[:0]
	if cap(out) < n {
		out = make([]byte, 0, n+16) // n bytes unescape to at most n (invalid UTF-8 grows by 2 a byte)
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			*scratch = out[:0]
			return out, nil
		case c < 0x20:
			return nil, s.fail(ErrControl, s.i, rune(c))
		case c == '\\':
			var err error
			if out, err = s.escape(out); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n <= 1 {
				switch s.Strings {
				case StrictStrings, ReplaceSurrogates:
					return nil, s.fail(ErrInvalidUTF8, s.i, 0)
				case ReplaceInvalid:
					out = utf8.AppendRune(out, utf8.RuneError)
				default:
					out = append(out, c)
				}
				s.i++
				continue
			}
			out = append(out, s.b[s.i:s.i+n]...)
			s.i += n
		}
	}
	return nil, s.fail(ErrUnterminated, s.i, 0)
}

// escape decodes the escape at s.i (a backslash) onto out.
func (s *Scanner) escape(out []byte) ([]byte, error) {
	if s.i+1 >= len(s.b) {
		s.i = len(s.b)
		return nil, s.fail(ErrUnterminated, s.i, 0)
	}
	e := s.b[s.i+1]
	s.i += 2
	if b, ok := SimpleEscape(e); ok {
		return append(out, b), nil
	}
	if e != 'u' {
		return nil, s.fail(ErrEscape, s.i-1, rune(e))
	}
	r, ok := Hex4(s.b[s.i:])
	if !ok {
		return nil, s.fail(ErrUnicodeEscape, s.i, 0)
	}
	s.i += 4
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(out, r), nil
	}
	if r < 0xDC00 && s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
		if r2, ok := Hex4(s.b[s.i+2:]); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			s.i += 6
			return utf8.AppendRune(out, utf16.DecodeRune(r, r2)), nil
		}
	}
	switch s.Strings {
	case StrictStrings:
		return nil, s.fail(ErrLoneSurrogate, s.i, r)
	case KeepInvalid:
		// WTF-8: the surrogate's own 3-byte form, which is invalid UTF-8.
		return append(out, byte(0xE0|r>>12), byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F)), nil
	}
	return utf8.AppendRune(out, utf8.RuneError), nil
}

// Number reads a number by the grammar of RFC 8259 and returns its literal.
func (s *Scanner) Number() ([]byte, error) {
	s.Space()
	start := s.i
	end, fault := numberEnd(s.b, s.i)
	if fault != 0 {
		s.i = end
		c := rune(0)
		if fault != 'd' {
			c = rune(fault)
		}
		return nil, s.fail(ErrNumber, end, c)
	}
	s.i = end
	return s.b[start:end], nil
}

// IsNumber reports whether s is exactly one JSON number (RFC 8259), the
// grammar strconv.ParseFloat is laxer about ("0x1p3", "Inf", "1_000").
func IsNumber(s string) bool {
	end, fault := numberEnd(s, 0)
	return fault == 0 && end == len(s)
}

// numberEnd scans the number at b[i:]: the index after it, and 0, or where
// it fails and 'd' (no integer digits), '.' or 'e' (no digits after them).
func numberEnd[T ~string | ~[]byte](b T, i int) (int, byte) {
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, 'd'
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, '.'
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, 'e'
		}
	}
	return i, 0
}

// ParseUint accepts only canonical decimal: digits, no sign, no leading
// zero, no fraction or exponent, no overflow. Anything else would make two
// byte strings mean one value.
func ParseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if len(b) == 20 && n > (1<<64-1-d)/10 { // 19 digits cannot overflow
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Uint reads a canonical unsigned integer (see ParseUint); false leaves the
// scanner somewhere inside the value.
func (s *Scanner) Uint() (uint64, bool) {
	s.Space()
	return s.uint()
}

func (s *Scanner) uint() (uint64, bool) {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	return ParseUint(s.b[start:s.i])
}

// Int64 reads a canonical integer: an optional '-' (not before 0) and a
// canonical unsigned integer within int64.
func (s *Scanner) Int64() (int64, bool) {
	s.Space()
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

// Int is Int64 within int32, the range every platform's int holds.
func (s *Scanner) Int() (int, bool) {
	n, ok := s.Int64()
	if !ok || n > 1<<31-1 || n < -(1<<31) {
		return 0, false
	}
	return int(n), true
}

// Bool reads true or false.
func (s *Scanner) Bool() (bool, bool) {
	s.Space()
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

// Null reads null.
func (s *Scanner) Null() bool {
	s.Space()
	if hasPrefix(s.b[s.i:], "null") {
		s.i += 4
		return true
	}
	return false
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// Skip reads one value of any kind, validating it (strings by s.Strings),
// and returns its bytes. depth bounds the nesting: a value more than depth
// levels inside the one read is an error.
func (s *Scanner) Skip(depth int) ([]byte, error) {
	s.Space()
	start := s.i
	if err := s.skip(depth); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

func (s *Scanner) skip(depth int) error {
	if depth < 0 {
		return s.fail(ErrDepth, s.i, 0)
	}
	switch c := s.Peek(); {
	case c == '{' || c == '[':
		if c == '{' {
			return s.Object(func([]byte) error { return s.skip(depth - 1) })
		}
		return s.Array(func(int) error { return s.skip(depth - 1) })
	case c == '"':
		_, err := s.String()
		return err
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.Number()
		return err
	}
	return s.Literal()
}

// Literal reads true, false or null.
func (s *Scanner) Literal() error {
	c := s.Peek()
	at := s.i
	switch c {
	case 't', 'f':
		if _, ok := s.Bool(); ok {
			return nil
		}
		return s.fail(ErrLiteral, at, rune(c))
	case 'n':
		if s.Null() {
			return nil
		}
		return s.fail(ErrLiteral, at, 'n')
	}
	return s.fail(ErrValue, s.i, rune(c))
}
