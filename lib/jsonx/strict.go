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
func Check(data []byte, root string, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("jsonx: Check needs a non-nil pointer, got %T", v)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec}
	if err := w.value(t.Elem(), root); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return &FieldError{Path: root, Msg: "trailing data after the document"}
		}
		return &FieldError{Path: root, Msg: "trailing data after the document: " + cleanJSONError(err)}
	}
	return nil
}

type walker struct {
	dec *json.Decoder
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
	jsonNumber      = reflect.TypeFor[json.Number]()
)

func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, &FieldError{Path: path, Msg: "unexpected end of input"}
		}
		return nil, &FieldError{Path: path, Msg: cleanJSONError(err)}
	}
	return tok, nil
}

// value checks the next JSON value against t. A nil t accepts any value but
// still refuses duplicate keys.
func (w *walker) value(t reflect.Type, path string) error {
	if t != nil && t != rawMessage && t != jsonNumber &&
		(reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		return w.custom(t, path)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
		if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return w.custom(t, path)
		}
	}
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	if tok == nil { // null leaves the Go value at its zero
		return nil
	}
	if t == nil || t.Kind() == reflect.Interface || t == rawMessage {
		return w.anyValue(tok, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return typeErr(path, "object", tok)
		}
		return w.object(path, func(key, p string) error {
			f, ok := fieldsOf(t)[key]
			if !ok {
				return &FieldError{Path: p, Msg: "unknown field"}
			}
			return w.value(f, p)
		})
	case reflect.Map:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return typeErr(path, "object", tok)
		}
		return w.object(path, func(_, p string) error { return w.value(t.Elem(), p) })
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if _, ok := tok.(string); !ok {
				return typeErr(path, "base64 string", tok)
			}
			return nil
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return typeErr(path, "array", tok)
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := w.token(path) // ']'
		return err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return typeErr(path, "string", tok)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return typeErr(path, "boolean", tok)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeErr(path, "integer", tok)
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not an integer in range", n)}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeErr(path, "non-negative integer", tok)
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not a non-negative integer in range", n)}
		}
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeErr(path, "number", tok)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return &FieldError{Path: path, Msg: fmt.Sprintf("%s is not a finite number", n)}
		}
	default:
		return &FieldError{Path: path, Msg: "field of unsupported type " + t.Kind().String()}
	}
	return nil
}

// custom hands a value to the type's own UnmarshalJSON/UnmarshalText and
// reports its error at path (e.g. a bad duration string).
func (w *walker) custom(t reflect.Type, path string) error {
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return &FieldError{Path: path, Msg: cleanJSONError(err)}
	}
	if string(raw) == "null" {
		return nil
	}
	if err := checkDuplicates(raw, path); err != nil {
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
		return typeErr(path, "string", raw)
	}
	if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		return &FieldError{Path: path, Msg: cleanJSONError(err)}
	}
	return nil
}

func checkDuplicates(raw []byte, path string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := walker{dec: dec}
	return w.value(nil, path)
}

// anyValue consumes a value of any shape whose first token is tok.
func (w *walker) anyValue(tok json.Token, path string) error {
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return w.object(path, func(_, p string) error { return w.value(nil, p) })
	case '[':
		for i := 0; w.dec.More(); i++ {
			if err := w.value(nil, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := w.token(path)
		return err
	}
	return &FieldError{Path: path, Msg: "unexpected " + string(d)}
}

// object iterates the members of an object whose '{' was consumed, refusing
// duplicate keys, and consumes the closing '}'.
func (w *walker) object(path string, member func(key, path string) error) error {
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := join(path, key)
		if seen[key] {
			return &FieldError{Path: p, Msg: "duplicate key"}
		}
		seen[key] = true
		if err := member(key, p); err != nil {
			return err
		}
	}
	_, err := w.token(path) // '}'
	return err
}

func typeErr(path, want string, tok any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf("expected %s, got %s", want, describe(tok))}
}

func describe(tok any) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		if v == '{' {
			return "object"
		}
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number " + string(v)
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
