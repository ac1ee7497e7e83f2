package jsonx

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Check walks data against the Go type of v and reports the first structural
// problem with its field path. It does not modify v.
//
// It stands on the Scanner, reading strings the way encoding/json does
// (invalid UTF-8 and lone surrogates as U+FFFD), since encoding/json decodes
// the value afterwards. A syntax error is still worded by encoding/json, as
// it always was: those words reach people and models (an agent's malformed
// reply goes back to the model quoting them), so they stay the same.
func Check(data []byte, root string, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("jsonx: Check needs a non-nil pointer, got %T", v)
	}
	w := walker{s: NewScanner(data)}
	w.s.Strings = ReplaceInvalid
	if err := w.value(t.Elem(), root, 0); err != nil {
		return err
	}
	end := w.s.Offset()
	if w.s.End() != nil {
		inValue, err := stdTokenAfter(data, end)
		switch {
		case err == nil:
			return &FieldError{Path: root, Msg: "trailing data after the document"}
		case inValue:
			return &FieldError{Path: root, Msg: cleanJSONError(err)}
		}
		return &FieldError{Path: root, Msg: "trailing data after the document: " + cleanJSONError(err)}
	}
	return nil
}

// checkMaxDepth bounds nesting in Check (encoding/json's own bound for the
// values it decodes).
const checkMaxDepth = 10000

type walker struct {
	s Scanner
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
	jsonNumber      = reflect.TypeFor[json.Number]()
)

// syntax turns a scanner error into a FieldError at path, in encoding/json's
// words for the same document; other errors pass through.
func (w *walker) syntax(path string, err error) error {
	se, ok := err.(*SyntaxError)
	if !ok {
		return err
	}
	if std := stdTokenError(w.s.Data()); std != nil {
		return &FieldError{Path: path, Msg: cleanJSONError(std)}
	}
	if se.Kind == ErrDepth {
		return &FieldError{Path: path, Msg: fmt.Sprintf("nesting deeper than %d levels", checkMaxDepth)}
	}
	return &FieldError{Path: path, Msg: se.Error()}
}

// decodeSyntax is the error encoding/json's Decode gives, in place of its
// token reader's, for a missing ':' or ',' before a value it decodes whole.
func (w *walker) decodeSyntax(path, msg string) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf("invalid JSON at byte %d: %s", w.s.Offset(), msg)}
}

// stdTokenError is the first error encoding/json's token reader meets in
// data (nil if it meets none): the wording of a syntax error, asked for
// only once one is found.
func stdTokenError(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		if _, err := dec.Token(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// stdTokenAfter is encoding/json's error for the first token after the
// value that ends at end (nil if that token is well-formed); inValue says
// it met the error before the value's end.
func stdTokenAfter(data []byte, end int) (inValue bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for dec.InputOffset() < int64(end) {
		if _, err := dec.Token(); err != nil {
			return true, err
		}
	}
	_, err = dec.Token()
	return false, err
}

// eof reports the end of input inside a value at path.
func (w *walker) atEnd() bool {
	return w.s.Peek() == 0 && w.s.Offset() >= len(w.s.Data())
}

func (w *walker) eof(path string) error {
	return &FieldError{Path: path, Msg: "unexpected end of input"}
}

// eofBefore is the end of input where a value of type t was due: a type that
// decodes itself was handed to encoding/json's Decode, which says "EOF".
func (w *walker) eofBefore(t reflect.Type, path string) error {
	if _, ok := customType(t); ok {
		return &FieldError{Path: path, Msg: "EOF"}
	}
	return w.eof(path)
}

// customType is the type whose own UnmarshalJSON or UnmarshalText decodes a
// value of type t (t itself or what its pointers point to), if any.
func customType(t reflect.Type) (reflect.Type, bool) {
	if t == nil {
		return nil, false
	}
	if t != rawMessage && t != jsonNumber &&
		(reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		return t, true
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return t, true
		}
	}
	return nil, false
}

// value checks the next JSON value against t. A nil t accepts any value but
// still refuses duplicate keys.
func (w *walker) value(t reflect.Type, path string, depth int) error {
	if ct, ok := customType(t); ok {
		return w.custom(ct, path, depth)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.atEnd() {
		return w.eof(path)
	}
	c := w.s.Peek()
	if c == 'n' {
		if err := w.s.Literal(); err != nil {
			return w.syntax(path, err)
		}
		return nil // null leaves the Go value at its zero
	}
	if t == nil || t.Kind() == reflect.Interface || t == rawMessage {
		return w.anyValue(path, depth)
	}
	switch t.Kind() {
	case reflect.Struct:
		if c != '{' {
			return w.mismatch(path, "object")
		}
		return w.object(path, depth, func(key, p string) (reflect.Type, error) {
			f, ok := fieldsOf(t)[key]
			if !ok {
				return nil, &FieldError{Path: p, Msg: "unknown field"}
			}
			return f, nil
		})
	case reflect.Map:
		if c != '{' {
			return w.mismatch(path, "object")
		}
		return w.object(path, depth, func(string, string) (reflect.Type, error) { return t.Elem(), nil })
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if c != '"' {
				return w.mismatch(path, "base64 string")
			}
			_, err := w.s.String()
			return w.syntax(path, err)
		}
		if c != '[' {
			return w.mismatch(path, "array")
		}
		return w.array(path, depth, t.Elem())
	}
	tok, err := w.scalar(path)
	if err != nil {
		return err
	}
	switch t.Kind() {
	case reflect.String:
		if tok.kind != '"' {
			return typeErr(path, "string", tok)
		}
	case reflect.Bool:
		if tok.kind != 't' {
			return typeErr(path, "boolean", tok)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tok.kind != '0' {
			return typeErr(path, "integer", tok)
		}
		i, err := strconv.ParseInt(tok.lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not an integer in range", tok.lit)}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tok.kind != '0' {
			return typeErr(path, "non-negative integer", tok)
		}
		u, err := strconv.ParseUint(tok.lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not a non-negative integer in range", tok.lit)}
		}
	case reflect.Float32, reflect.Float64:
		if tok.kind != '0' {
			return typeErr(path, "number", tok)
		}
		f, err := strconv.ParseFloat(tok.lit, 64)
		if err != nil || math.IsInf(f, 0) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not a finite number", tok.lit)}
		}
	default:
		return &FieldError{Path: path, Msg: "field of unsupported type " + t.Kind().String()}
	}
	return nil
}

// token is a scalar as read: kind '"' (string), '0' (number, with its
// literal), 't' (boolean) or a container's opening byte.
type token struct {
	kind byte
	lit  string
}

// scalar reads the scalar (or notes the container) at the scanner.
func (w *walker) scalar(path string) (token, error) {
	switch c := w.s.Peek(); {
	case c == '{' || c == '[':
		return token{kind: c}, nil
	case c == '"':
		_, err := w.s.String()
		return token{kind: '"'}, w.syntax(path, err)
	case c == '-' || c >= '0' && c <= '9':
		lit, err := w.s.Number()
		if err != nil {
			return token{}, w.syntax(path, err)
		}
		return token{kind: '0', lit: string(lit)}, nil
	}
	if err := w.s.Literal(); err != nil {
		return token{}, w.syntax(path, err)
	}
	return token{kind: 't'}, nil
}

// mismatch reports a value that is not of the wanted JSON type; a scalar is
// read first, so that a malformed one is reported as such.
func (w *walker) mismatch(path, want string) error {
	tok, err := w.scalar(path)
	if err != nil {
		return err
	}
	return typeErr(path, want, tok)
}

// custom hands a value to the type's own UnmarshalJSON/UnmarshalText and
// reports its error at path (e.g. a bad duration string).
func (w *walker) custom(t reflect.Type, path string, depth int) error {
	if w.atEnd() {
		return w.eofBefore(t, path)
	}
	// Syntax first, reported at the value as encoding/json's Decode did,
	// then duplicate keys inside it, at their own paths.
	raw, err := w.s.Skip(checkMaxDepth)
	if err != nil {
		if err.(*SyntaxError).End {
			return w.eof(path)
		}
		return w.syntax(path, err)
	}
	if string(raw) == "null" {
		return nil
	}
	inner := walker{s: NewScanner(raw)}
	inner.s.Strings = ReplaceInvalid
	if err := inner.value(nil, path, depth); err != nil {
		return err
	}
	p := reflect.New(t)
	if u, ok := p.Interface().(json.Unmarshaler); ok {
		if err := u.UnmarshalJSON(raw); err != nil {
			return &FieldError{Path: path, Msg: cleanJSONError(err)}
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return typeErr(path, "string", json.RawMessage(raw))
	}
	if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		return &FieldError{Path: path, Msg: cleanJSONError(err)}
	}
	return nil
}

// anyValue consumes a value of any shape.
func (w *walker) anyValue(path string, depth int) error {
	switch w.s.Peek() {
	case '{':
		return w.object(path, depth, func(string, string) (reflect.Type, error) { return nil, nil })
	case '[':
		return w.array(path, depth, nil)
	}
	_, err := w.scalar(path)
	return err
}

// object iterates the members of an object, refusing duplicate keys:
// member gives the Go type of the member's value (or an error about its
// name, before its ':' is read, as encoding/json's token reader did).
func (w *walker) object(path string, depth int, member func(key, path string) (reflect.Type, error)) error {
	if depth >= checkMaxDepth {
		return w.syntax(path, &SyntaxError{Kind: ErrDepth, Offset: w.s.Offset()})
	}
	w.s.Expect('{') // the caller saw it
	seen := map[string]bool{}
	for n := 0; ; n++ {
		more, err := w.s.NextMember(n)
		if err == nil && more {
			var k []byte
			k, err = w.s.Key()
			if err == nil {
				key := string(k)
				p := join(path, key)
				if seen[key] {
					return &FieldError{Path: p, Msg: "duplicate key"}
				}
				seen[key] = true
				t, err := member(key, p)
				if err != nil {
					return err
				}
				if err := w.s.Expect(':'); err != nil {
					if err.(*SyntaxError).End {
						return w.eofBefore(t, p)
					}
					if _, ok := customType(t); ok {
						return w.decodeSyntax(p, "expected colon after object key")
					}
					return w.syntax(p, err)
				}
				if err := w.value(t, p, depth+1); err != nil {
					return err
				}
				continue
			}
		}
		if err != nil {
			if err.(*SyntaxError).End {
				return w.eof(path)
			}
			return w.syntax(path, err)
		}
		return nil
	}
}

// array iterates the items of an array. A syntax error is placed where
// encoding/json's token reader placed it: at the item it expected, or at
// the array where the input ends or a bracket is wrong.
func (w *walker) array(path string, depth int, elem reflect.Type) error {
	if depth >= checkMaxDepth {
		return w.syntax(path, &SyntaxError{Kind: ErrDepth, Offset: w.s.Offset()})
	}
	n := 0
	err := w.s.Array(func(i int) error {
		n = i
		at := path
		if i > 0 {
			at = fmt.Sprintf("%s[%d]", path, i) // after a comma: the item it promised
		}
		if w.atEnd() {
			if i > 0 {
				return w.eofBefore(elem, at)
			}
			return w.eof(at)
		}
		if c := w.s.Peek(); c == ']' || c == '}' {
			return w.syntax(at, w.s.Literal())
		}
		return w.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1)
	})
	if err != nil {
		se, ok := err.(*SyntaxError)
		switch {
		case ok && se.End:
			return w.eof(path)
		case ok && se.Kind == ErrArrayNext && w.s.Peek() != '}':
			at := fmt.Sprintf("%s[%d]", path, n+1)
			if _, custom := customType(elem); custom {
				return w.decodeSyntax(at, "expected comma after array element")
			}
			return w.syntax(at, err)
		}
		return w.syntax(path, err)
	}
	return nil
}

func typeErr(path, want string, tok any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf("expected %s, got %s", want, describe(tok))}
}

func describe(tok any) string {
	switch v := tok.(type) {
	case token:
		switch v.kind {
		case '{':
			return "object"
		case '[':
			return "array"
		case '"':
			return "string"
		case 't':
			return "boolean"
		case '0':
			return "number " + v.lit
		}
	case json.RawMessage:
		if len(v) > 0 {
			switch v[0] {
			case '{':
				return "object"
			case '[':
				return "array"
			case '"':
				return "string"
			case 't', 'f':
				return "boolean"
			}
			return "number"
		}
	}
	return "value"
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf maps the exact JSON names of a struct's fields (embedded structs
// flattened as encoding/json does) to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	collectFields(t, m)
	fieldCache.Store(t, m)
	return m
}

func collectFields(t reflect.Type, m map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, m)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup {
			m[name] = f.Type
		}
	}
}

// cleanJSONError strips Go type names and the "json: " prefix from
// encoding/json errors so messages read as the user's problem, not ours.
func cleanJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return fmt.Sprintf("expected %s, got %s", ute.Type.Kind(), ute.Value)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("invalid time %q (want RFC 3339, e.g. \"2026-01-02T15:04:05.000000000Z\")", pe.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if msg == "unexpected EOF" {
		return "unexpected end of input"
	}
	return msg
}
