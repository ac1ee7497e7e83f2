package queue

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/vocab"
)

// MaxManifestBytes bounds one Task manifest. A manifest is a request, not a
// payload: large inputs belong in context files in the workspace.
const MaxManifestBytes = 1 << 20

// MaxIDLen bounds task, worker and queue names (lib/vocab holds the rule).
const MaxIDLen = vocab.MaxIDLen

// ValidName checks a task id, worker id or queue name: 1–128 of
// [A-Za-z0-9_-], starting with a letter or digit. The same names are file
// names under the queue directory and NATS subject tokens
// (art.<queue>.task.<id>), so dots, slashes and wildcards are out.
func ValidName(what, s string) error { return vocab.ValidName(what, s) }

// DecodeManifest strictly decodes a Task manifest (unknown fields, bad
// durations, a missing program: exit 2 naming the field) with the runner's
// own defaults and validation, so a task the worker would refuse as malformed
// is refused at enqueue instead.
func DecodeManifest(data []byte) (*execx.Task, error) {
	if len(data) > MaxManifestBytes {
		return nil, jsonx.Errorf("task", "manifest is %d bytes, more than %d", len(data), MaxManifestBytes)
	}
	t, err := execx.DecodeTask(data)
	if err != nil {
		return nil, err
	}
	if t.ID != "" {
		if err := ValidName("task.id", t.ID); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ArgvTask is the manifest of `artq enqueue -- PROGRAM ARGS…`.
func ArgvTask(argv []string) (*execx.Task, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, jsonx.Errorf("task.program", "required")
	}
	doc := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), Program: argv[0], Args: argv[1:]}
	data, err := jsonx.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return DecodeManifest(data)
}

// canonical is the stored form of a manifest: compact, fields in declaration
// order, defaults applied. Two requests mean the same task exactly when their
// canonical forms are equal.
func canonical(t *execx.Task) ([]byte, error) {
	data, err := jsonx.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if len(data) > MaxManifestBytes {
		return nil, jsonx.Errorf("task", "manifest is %d bytes, more than %d", len(data), MaxManifestBytes)
	}
	return data, nil
}

// NewID returns a fresh task id: 10 characters of millisecond time and 16 of
// randomness in Crockford's base32, lower case (26 in all, like a ULID), so
// ids sort by creation time and never collide in practice, which lets an
// enqueue of a generated id skip the existence check.
func NewID() string {
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return idFrom(time.Now(), r)
}

// idFrom is NewID's id for time now and 80 random bits r.
func idFrom(now time.Time, r [10]byte) string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	var b [26]byte
	ms := uint64(now.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	hi := binary.BigEndian.Uint64(r[:8])
	lo := uint64(binary.BigEndian.Uint16(r[8:]))
	// 80 random bits: 64 from hi, 16 from lo.
	for i := 25; i >= 10; i-- {
		b[i] = alphabet[lo&31]
		lo = lo>>5 | (hi&31)<<11
		hi >>= 5
	}
	return string(b[:])
}

// The batch fast path. A batch of 100,000 manifests is decoded and
// re-encoded 100,000 times, so the general strict decoder (reflection, a
// token walk and a second decode) would be most of an enqueue's cost. Most
// manifests are the simple shape below; for those, decodeSimple builds the
// same Task the strict decoder would and appendSimple writes the same bytes
// jsonx.Marshal would (FuzzManifestFast holds both to it). Anything else —
// another field, an escape, a non-ASCII byte, a number, null, a duplicate
// key, any error at all — falls back to DecodeManifest and canonical, so
// there is one decoder whose errors users see and one definition of the
// stored form.

// Fields of the simple shape, as a bit set (a repeat means fallback).
const (
	fAPIVersion = 1 << iota
	fKind
	fID
	fProgram
	fArgs
	fDir
	fContext
)

// decodeManifestFast is DecodeManifest, taking the fast path when it can.
// A Task of the simple shape is decoded into *reuse (its Args array
// reused too), so a caller that keeps nothing of it between calls makes
// almost no garbage per manifest; any other comes back new.
func decodeManifestFast(data []byte, reuse *execx.Task) (*execx.Task, error) {
	if decodeSimple(data, reuse) {
		return reuse, nil
	}
	return DecodeManifest(data)
}

// decodeSimple decodes into t a manifest made only of apiVersion, kind,
// id, program, dir (plain strings) and args, context (arrays of plain
// strings), each at most once, and applies defaults and validation. It
// reports false for anything else, errors included: the caller falls back
// to DecodeManifest.
func decodeSimple(data []byte, t *execx.Task) bool {
	if len(data) > MaxManifestBytes {
		return false
	}
	s := simpleScanner{data: data}
	if !s.byte('{') {
		return false
	}
	*t = execx.Task{Args: t.Args[:0]}
	var seen int
	if !s.peek('}') {
		for {
			key, ok := s.raw()
			if !ok || !s.byte(':') {
				return false
			}
			var bit int
			switch string(key) {
			case "apiVersion":
				bit = fAPIVersion
				ok = s.is(jsonx.APIVersion)
				t.APIVersion = jsonx.APIVersion
			case "kind":
				bit = fKind
				ok = s.is(execx.KindTask)
				t.Kind = execx.KindTask
			case "id":
				bit = fID
				t.ID, ok = s.str()
			case "program":
				bit = fProgram
				t.Program, ok = s.str()
			case "dir":
				bit = fDir
				t.Dir, ok = s.str()
			case "args":
				bit = fArgs
				t.Args, ok = s.strs(t.Args)
			case "context":
				bit = fContext
				t.Context, ok = s.strs(nil)
			default:
				return false
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			if s.byte(',') {
				continue
			}
			break
		}
	}
	if !s.byte('}') || !s.end() || seen&(fAPIVersion|fKind) != fAPIVersion|fKind {
		return false
	}
	if seen&fArgs == 0 {
		t.Args = nil // as the strict decoder leaves it
	}
	t.Default()
	return t.Validate() == nil && (t.ID == "" || ValidName("task.id", t.ID) == nil)
}

// simpleScanner reads the tokens of decodeSimple's shape.
type simpleScanner struct {
	data []byte
	i    int
}

func (s *simpleScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c (after white space) if it is next.
func (s *simpleScanner) byte(c byte) bool {
	if s.peek(c) {
		s.i++
		return true
	}
	return false
}

func (s *simpleScanner) peek(c byte) bool {
	s.ws()
	return s.i < len(s.data) && s.data[s.i] == c
}

func (s *simpleScanner) end() bool {
	s.ws()
	return s.i == len(s.data)
}

// raw reads a plain string (printable ASCII without '"' or '\', which
// decodes and encodes as itself) and returns its bytes.
func (s *simpleScanner) raw() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.data) {
		c := s.data[s.i]
		if c == '"' {
			v := s.data[start:s.i]
			s.i++
			return v, true
		}
		if !plainByte(c) {
			return nil, false
		}
		s.i++
	}
	return nil, false
}

func (s *simpleScanner) str() (string, bool) {
	v, ok := s.raw()
	return string(v), ok
}

// is reads a plain string and reports whether it is want.
func (s *simpleScanner) is(want string) bool {
	v, ok := s.raw()
	return ok && string(v) == want
}

// strs reads an array of plain strings, appending to dst[:0]; [] is an
// empty, non-nil slice, as encoding/json decodes it.
func (s *simpleScanner) strs(dst []string) ([]string, bool) {
	if !s.byte('[') {
		return nil, false
	}
	out := dst[:0]
	if out == nil {
		out = []string{}
	}
	if s.byte(']') {
		return out, true
	}
	for {
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if s.byte(',') {
			continue
		}
		return out, s.byte(']')
	}
}

func plainByte(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

func plainString(v string) bool {
	for i := 0; i < len(v); i++ {
		if !plainByte(v[i]) {
			return false
		}
	}
	return true
}

// appendCanonical appends the stored form (canonical) of t with its id
// set to id to dst, writing the simple shape directly and anything else
// through canonical.
func appendCanonical(dst []byte, t *execx.Task, id string) ([]byte, error) {
	if out, ok := appendSimple(dst, t, id); ok {
		if len(out)-len(dst) > MaxManifestBytes {
			return nil, jsonx.Errorf("task", "manifest is %d bytes, more than %d", len(out)-len(dst), MaxManifestBytes)
		}
		return out, nil
	}
	c := *t
	c.ID = id
	m, err := canonical(&c)
	if err != nil {
		return nil, err
	}
	return append(dst, m...), nil
}

// appendSimple writes what jsonx.Marshal writes for a Task of the simple
// shape (no env, no limits, plain strings) with id as its id; ok is false,
// with dst unchanged, for any other Task.
func appendSimple(dst []byte, t *execx.Task, id string) ([]byte, bool) {
	if t.Env.Allow != nil || t.Env.Set != nil || t.Limits != (execx.Limits{}) ||
		!plainString(t.APIVersion) || !plainString(t.Kind) || !plainString(id) ||
		!plainString(t.Program) || !plainString(t.Dir) {
		return dst, false
	}
	for _, v := range t.Args {
		if !plainString(v) {
			return dst, false
		}
	}
	for _, v := range t.Context {
		if !plainString(v) {
			return dst, false
		}
	}
	dst = append(dst, `{"apiVersion":"`...)
	dst = append(dst, t.APIVersion...)
	dst = append(dst, `","kind":"`...)
	dst = append(dst, t.Kind...)
	dst = append(dst, '"')
	if id != "" {
		dst = append(dst, `,"id":"`...)
		dst = append(dst, id...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"program":"`...)
	dst = append(dst, t.Program...)
	dst = append(dst, '"')
	dst = appendStrs(dst, `,"args":[`, t.Args)
	if t.Dir != "" {
		dst = append(dst, `,"dir":"`...)
		dst = append(dst, t.Dir...)
		dst = append(dst, '"')
	}
	dst = appendStrs(dst, `,"context":[`, t.Context)
	return append(dst, '}'), true
}

func appendStrs(dst []byte, key string, vs []string) []byte {
	if len(vs) == 0 {
		return dst
	}
	dst = append(dst, key...)
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, v...)
		dst = append(dst, '"')
	}
	return append(dst, ']')
}
