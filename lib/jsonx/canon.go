package jsonx

// This file is the RFC 8785 JSON Canonicalization Scheme (JCS): one byte
// sequence for one JSON value, so that a hash of it can name the value (artobs
// event ids are "sha256:" of the canonical envelope).
//
// JCS is: no whitespace; object members sorted by their keys compared as
// arrays of UTF-16 code units; strings with only '"', '\\' and the C0 controls
// escaped (the two-letter forms \b \t \n \f \r where they exist, else \u00xx in
// lower-case hex), everything else as literal UTF-8; numbers as IEEE 754
// doubles written the way ECMAScript's Number.prototype.toString writes them.
//
// Parse is the strict reader underneath: it refuses duplicate keys, invalid
// UTF-8, lone surrogates, non-finite numbers and (on request) integer literals
// a double cannot hold exactly, and names the offending path the way every
// other jsonx error does. It stands on the Scanner (scan.go) rather than
// encoding/json because the Token API is several times slower and silently
// turns invalid UTF-8 into U+FFFD, which would hide binary input from the
// redactor that must count it.

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is 2^53, the largest magnitude up to which every integer has
// an exact IEEE 754 double. An integer beyond it would be silently rounded by
// any JSON reader that uses doubles (every JavaScript one, and JCS itself).
const MaxSafeInteger = 1 << 53

// DefaultMaxDepth bounds nesting in Parse when ParseOptions.MaxDepth is 0.
const DefaultMaxDepth = 512

// ParseOptions tunes Parse. The zero value is the strict form JCS needs.
type ParseOptions struct {
	// MaxDepth bounds the nesting of arrays and objects (0: DefaultMaxDepth).
	MaxDepth int
	// KeepInvalidUTF8 keeps strings with invalid UTF-8 or lone surrogate
	// escapes as their raw bytes (a lone surrogate as its 3-byte WTF-8 form)
	// instead of refusing them, so a caller can recognise binary data and
	// deal with it rather than have it replaced by U+FFFD behind its back.
	KeepInvalidUTF8 bool
	// SafeIntegers refuses integer literals (no fraction, no exponent) whose
	// magnitude exceeds 2^53.
	SafeIntegers bool
}

// Parse decodes one JSON value from data strictly: objects become
// map[string]any, arrays []any, strings string, numbers json.Number (the
// literal, checked finite), true/false bool and null nil. Duplicate keys,
// invalid UTF-8, lone surrogates, non-finite numbers, nesting beyond the limit
// and anything after the value are *FieldError (exit 2) naming the path under
// root.
func Parse(data []byte, root string, opt ParseOptions) (any, error) {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = DefaultMaxDepth
	}
	p := parser{s: NewScanner(data), opt: opt, root: root}
	if opt.KeepInvalidUTF8 {
		p.s.Strings = KeepInvalid
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.s.End() != nil {
		return nil, &FieldError{Path: root, Msg: fmt.Sprintf("trailing data after the document at byte %d", p.s.Offset())}
	}
	return v, nil
}

// Canonical returns the RFC 8785 canonical form of the JSON text data. The
// input must be I-JSON: no duplicate keys, valid Unicode, finite numbers.
func Canonical(data []byte) ([]byte, error) {
	v, err := Parse(data, "", ParseOptions{})
	if err != nil {
		return nil, err
	}
	return AppendCanonical(nil, v)
}

// AppendCanonical appends the canonical form of v to dst. v is a tree of
// nil, bool, string, json.Number, float64, float32, the integer kinds,
// map[string]any and []any, as Parse returns and Go code builds. Strings must
// be valid UTF-8, floats finite, integers within ±2^53.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if !utf8.ValidString(v) {
			return dst, fmt.Errorf("canonical JSON: string is not valid UTF-8")
		}
		return AppendCanonicalString(dst, v), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return dst, fmt.Errorf("canonical JSON: invalid number %q", string(v))
		}
		return AppendCanonicalNumber(dst, f)
	case float64:
		return AppendCanonicalNumber(dst, v)
	case float32:
		return AppendCanonicalNumber(dst, float64(v))
	case int:
		return appendInt(dst, int64(v))
	case int64:
		return appendInt(dst, v)
	case int32:
		return appendInt(dst, int64(v))
	case uint64:
		if v > MaxSafeInteger {
			return dst, fmt.Errorf("canonical JSON: integer %d is beyond 2^53", v)
		}
		return appendInt(dst, int64(v))
	case uint:
		return AppendCanonical(dst, uint64(v))
	case uint32:
		return appendInt(dst, int64(v))
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, CompareKeys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if !utf8.ValidString(k) {
				return dst, fmt.Errorf("canonical JSON: key is not valid UTF-8")
			}
			dst = AppendCanonicalString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendCanonical(dst, v[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendCanonical(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("canonical JSON: unsupported value of kind %s", reflect.TypeOf(v).Kind())
}

func appendInt(dst []byte, i int64) ([]byte, error) {
	if i > MaxSafeInteger || i < -MaxSafeInteger {
		return dst, fmt.Errorf("canonical JSON: integer %d is beyond ±2^53", i)
	}
	return strconv.AppendInt(dst, i, 10), nil
}

const hexDigits = "0123456789abcdef"

// AppendCanonicalString appends s as an RFC 8785 JSON string: '"' and '\\'
// escaped, C0 controls as \b \t \n \f \r or \u00xx, everything else
// literal. It is art's one JSON string writer (envelopes, redacted attrs,
// queue records and snapshots), so there is one set of escaping rules.
//
// A byte that is not part of valid UTF-8 is written as U+FFFD, the way
// encoding/json writes it: the output is always valid JSON, and canonical
// for the string with the replacement made. Canonical input (AppendCanonical
// and the redactor check it first) never reaches that rule, so it changes no
// envelope's bytes.
func AppendCanonicalString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch strClass[c] {
		case 0:
			i++
			continue
		case strMulti:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += n
			continue
		}
		dst = appendEscapedASCII(append(dst, s[start:i]...), c)
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscapedASCII appends the escape of an ASCII byte a JSON string
// cannot hold as it is (quote, backslash, control): \b \f \n \r \t short,
// the rest \u00XX, as both encoding/json and RFC 8785 write them.
func appendEscapedASCII(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// CanonicalStringLen is len(AppendCanonicalString(nil, s)) without building it.
func CanonicalStringLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += 2 // one byte becomes the three of U+FFFD
			}
			i += size
			continue
		}
		i++
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"', '\\', '\b', '\t', '\n', '\f', '\r':
			n++
		default:
			n += 5
		}
	}
	return n
}

// AppendCanonicalNumber appends f the way ECMAScript's Number::toString
// writes it (RFC 8785 §3.2.2.3): the shortest digits that round-trip, fixed
// notation for decimal exponents in [-6, 21), exponent notation with an
// explicit sign otherwise, and -0 as 0. NaN and ±Inf have no JSON form.
func AppendCanonicalNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("canonical JSON: %v is not a finite number", f)
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Integers below 2^53 are the common case and print as themselves.
	if f < MaxSafeInteger && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10), nil
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±XX, shortest
	mant, exp := e, 0
	for j := range e {
		if e[j] == 'e' {
			mant = e[:j]
			x, _ := strconv.Atoi(string(e[j+1:]))
			exp = x
			break
		}
	}
	var digits [24]byte
	k := 0
	for _, c := range mant {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	d := digits[:k]
	n := exp + 1 // the position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// CompareKeys orders strings as RFC 8785 sorts object keys: by their UTF-16
// code units, not by bytes or code points. The two orders differ only between
// U+E000..U+FFFF and the supplementary planes (which UTF-16 writes as
// surrogates 0xD800..0xDFFF, so they sort first).
func CompareKeys(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if ca < utf8.RuneSelf && cb < utf8.RuneSelf {
			if ca != cb {
				return int(ca) - int(cb)
			}
			i++
			j++
			continue
		}
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, nb := utf8.DecodeRuneInString(b[j:])
		i += na
		j += nb
		if ra == rb {
			continue
		}
		ua, la := utf16Units(ra)
		ub, lb := utf16Units(rb)
		if ua != ub {
			return int(ua) - int(ub)
		}
		return int(la) - int(lb)
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

// utf16Units returns the first UTF-16 code unit of r and, for a supplementary
// rune, its second (low surrogate); 0 otherwise.
func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	h, l := utf16.EncodeRune(r)
	return uint16(h), uint16(l)
}

// parser builds the value tree over the Scanner, adding what the scanner
// leaves to its callers: the path of every error, duplicate keys, the depth
// bound and the number rules of I-JSON.
type parser struct {
	s     Scanner
	opt   ParseOptions
	root  string
	path  []pathSeg // from root to the current value, for error messages
	depth int
}

// pathSeg is an object key or (key == "" and index >= 0) an array index.
type pathSeg struct {
	key   string
	index int
}

func (p *parser) errf(format string, args ...any) error {
	return &FieldError{Path: p.pathString(), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) syntaxAt(at int, what string) error {
	if at >= len(p.s.Data()) {
		return p.errf("unexpected end of input")
	}
	return p.errf("invalid JSON at byte %d: %s", at, what)
}

// scanErr words a scanner error the way Parse always has, at the current
// path; other errors pass through.
func (p *parser) scanErr(err error) error {
	se, ok := err.(*SyntaxError)
	if !ok {
		return err
	}
	at := se.Offset
	switch se.Kind {
	case ErrWant:
		return p.syntaxAt(at, "expected ':' after a key")
	case ErrWantString:
		return p.syntaxAt(at, "expected a string key")
	case ErrObjectNext:
		return p.syntaxAt(at, "expected ',' or '}' in an object")
	case ErrArrayNext:
		return p.syntaxAt(at, "expected ',' or ']' in an array")
	case ErrLiteral:
		word := map[rune]string{'t': "true", 'f': "false", 'n': "null"}[se.Char]
		return p.syntaxAt(at, "invalid literal (want "+word+")")
	case ErrNumber:
		switch se.Char {
		case '.':
			return p.syntaxAt(at, "invalid number: digits must follow '.'")
		case 'e':
			return p.syntaxAt(at, "invalid number: digits must follow the exponent")
		}
		return p.syntaxAt(at, "invalid number")
	case ErrUnterminated:
		return p.errf("unexpected end of input in a string")
	case ErrControl:
		return p.syntaxAt(at, "control character in a string")
	case ErrInvalidUTF8:
		return p.errf("string is not valid UTF-8 (byte %d)", at)
	case ErrEscape:
		return p.syntaxAt(at, fmt.Sprintf("invalid escape \\%c", se.Char))
	case ErrUnicodeEscape:
		return p.syntaxAt(at, "invalid \\u escape")
	case ErrLoneSurrogate:
		return p.errf("string has a lone surrogate \\u%04x", se.Char)
	}
	return p.syntaxAt(at, fmt.Sprintf("unexpected character %q", se.Char))
}

func (p *parser) pathString() string {
	s := p.root
	for _, seg := range p.path {
		if seg.index >= 0 {
			s += "[" + strconv.Itoa(seg.index) + "]"
		} else {
			s = join(s, seg.key)
		}
	}
	return s
}

func (p *parser) value() (any, error) {
	c := p.s.Peek()
	at := p.s.Offset()
	if at >= len(p.s.Data()) {
		return nil, p.errf("unexpected end of input")
	}
	switch {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		b, err := p.s.String()
		if err != nil {
			return nil, p.scanErr(err)
		}
		return string(b), nil
	case c == 't' || c == 'f' || c == 'n':
		if err := p.s.Literal(); err != nil {
			return nil, p.scanErr(err)
		}
		if c == 'n' {
			return nil, nil
		}
		return c == 't', nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.syntaxAt(at, fmt.Sprintf("unexpected character %q", rune(c)))
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.opt.MaxDepth {
		return p.errf("nesting deeper than %d levels", p.opt.MaxDepth)
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	s := &p.s
	s.i++ // '{', seen by value
	if s.Peek() == '}' {
		s.i++
		p.depth--
		return m, nil
	}
	for {
		if s.Peek() != '"' {
			return nil, p.scanErr(s.fail(ErrWantString, s.i, 0))
		}
		b, err := s.str(&s.kbuf)
		if err != nil {
			return nil, p.scanErr(err)
		}
		key := string(b)
		p.path = append(p.path, pathSeg{key: key, index: -1})
		if _, dup := m[key]; dup {
			return nil, p.errf("duplicate key")
		}
		if err := s.Expect(':'); err != nil {
			return nil, p.scanErr(err)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.path = p.path[:len(p.path)-1]
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			p.depth--
			return m, nil
		default:
			return nil, p.scanErr(s.fail(ErrObjectNext, s.i, 0))
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	a := []any{}
	s := &p.s
	s.i++ // '[', seen by value
	if s.Peek() == ']' {
		s.i++
		p.depth--
		return a, nil
	}
	for n := 0; ; n++ {
		p.path = append(p.path, pathSeg{index: n})
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		a = append(a, v)
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			p.depth--
			return a, nil
		default:
			return nil, p.scanErr(s.fail(ErrArrayNext, s.i, 0))
		}
	}
}

func (p *parser) number() (any, error) {
	b, err := p.s.Number()
	if err != nil {
		return nil, p.scanErr(err)
	}
	lit := string(b)
	integer := !strings.ContainsAny(lit, ".eE")
	if integer && len(lit) <= 15 {
		return json.Number(lit), nil // finite and within ±2^53
	}
	if integer && p.opt.SafeIntegers {
		u, err := strconv.ParseUint(strings.TrimPrefix(lit, "-"), 10, 64)
		if err != nil || u > MaxSafeInteger {
			return nil, p.errf("integer %s is beyond ±2^53 and cannot be represented exactly", lit)
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && math.IsInf(f, 0) {
		return nil, p.errf("number %s is not finite", lit)
	}
	return json.Number(lit), nil
}
