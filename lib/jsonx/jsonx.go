// Package jsonx owns how art reads and writes its JSON documents: strict
// decoding that names the offending field path, the apiVersion/kind header, the
// defaults-then-validate order, and compact deterministic encoding.
//
// encoding/json alone is too forgiving for operator-owned documents: it
// matches field names case-insensitively, keeps the last of duplicate keys,
// and its unknown-field error names no path. A typo such as "timout" must fail
// loudly, because it would otherwise silently change what runs.
package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/art-runtime/art/lib/exitcode"
)

// APIVersion is carried by every art document.
const APIVersion = "art/v1alpha1"

// TypeMeta is the header every document embeds.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Meta returns a filled header for kind.
func Meta(kind string) TypeMeta { return TypeMeta{APIVersion: APIVersion, Kind: kind} }

// FieldError is a decoding or validation failure at a field path such as
// "task.limits.timout". It carries exit code 2 (invalid input).
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// ExitCode implements exitcode.Coder.
func (e *FieldError) ExitCode() int { return exitcode.Usage }

// Errorf builds a FieldError; validators use it so every semantic error names
// its field the same way decoding errors do.
func Errorf(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Document is a kind of art document. Root names the top of field paths in
// errors ("task", "policy").
type Document interface {
	DocumentKind() string
}

// Defaulter fills fields left empty, after decoding and before validation.
type Defaulter interface {
	Default()
}

// Validator checks semantic limits after defaults are applied.
type Validator interface {
	Validate() error
}

// Decode reads one whole document from data into v: strict structure, then
// apiVersion and kind, then Default, then Validate. root names the document in
// error paths.
func Decode(data []byte, root string, v Document) error {
	// A document of another kind would otherwise fail on its first field
	// this kind lacks ("task.program: unknown field"); naming the kind is
	// the message that helps.
	if peek := metaOf(data); peek.Kind != "" && peek.Kind != v.DocumentKind() {
		return Errorf(join(root, "kind"), "got %q, want %q", peek.Kind, v.DocumentKind())
	}
	if err := Unmarshal(data, root, v); err != nil {
		return err
	}
	meta := metaOf(data)
	if meta.APIVersion == "" {
		return Errorf(join(root, "apiVersion"), "required (want %q)", APIVersion)
	}
	if meta.APIVersion != APIVersion {
		return Errorf(join(root, "apiVersion"), "unsupported %q (want %q)", meta.APIVersion, APIVersion)
	}
	if meta.Kind != v.DocumentKind() {
		if meta.Kind == "" {
			return Errorf(join(root, "kind"), "required (want %q)", v.DocumentKind())
		}
		return Errorf(join(root, "kind"), "got %q, want %q", meta.Kind, v.DocumentKind())
	}
	if d, ok := v.(Defaulter); ok {
		d.Default()
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// metaOf reads the header leniently; Unmarshal is what checks structure.
func metaOf(data []byte) TypeMeta {
	var m struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
	}
	_ = json.Unmarshal(data, &m)
	s, _ := m.APIVersion.(string)
	k, _ := m.Kind.(string)
	return TypeMeta{APIVersion: s, Kind: k}
}

// Unmarshal decodes data into v strictly: exact field names, no unknown
// fields, no duplicate keys, type mismatches and bad values reported with the
// field path, nothing after the value. Numbers in interface values decode as
// json.Number so large integers survive.
func Unmarshal(data []byte, root string, v any) error {
	if err := Check(data, root, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return &FieldError{Path: root, Msg: cleanJSONError(err)}
	}
	return nil
}

// Marshal encodes v compactly without HTML escaping and without a trailing
// newline. Go encodes struct fields in declaration order and map keys sorted,
// so the same value always gives the same bytes.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalIndent is Marshal for humans: two-space indent, trailing newline.
func MarshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
