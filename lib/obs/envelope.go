package obs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
	"github.com/art-runtime/art/lib/vocab"
)

// Envelope is a redacted, sequenced, content-addressed event. It is
// immutable: its fields are read through methods, and its bytes are the
// canonical JSON its id was computed from.
type Envelope struct {
	id          string
	subject     string
	typ         string
	role        Role
	correlation string
	causation   string
	time        string
	seq         uint64
	attrs       []byte // canonical JSON object
	red         redact.Summary
	line        []byte // canonical JSON of the whole envelope, id included
}

// ID is "sha256:" + the hex SHA-256 of the canonical envelope without id.
func (e *Envelope) ID() string { return e.id }

// Subject is the stream the event belongs to.
func (e *Envelope) Subject() string { return e.subject }

// Seq is the event's position in its subject's stream, from 1.
func (e *Envelope) Seq() uint64 { return e.seq }

// Type says what happened.
func (e *Envelope) Type() string { return e.typ }

// Role is who produced the event, if said.
func (e *Envelope) Role() Role { return e.role }

// Correlation links events of one piece of work across subjects.
func (e *Envelope) Correlation() string { return e.correlation }

// Causation is the id of the event that caused this one, if any.
func (e *Envelope) Causation() string { return e.causation }

// TimeString is the event time as written: RFC 3339, UTC, nanoseconds.
func (e *Envelope) TimeString() string { return e.time }

// Time is the event time.
func (e *Envelope) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.time)
	return t
}

// Attrs returns a copy of the redacted attributes (canonical JSON object).
func (e *Envelope) Attrs() json.RawMessage { return bytes.Clone(e.attrs) }

// Redaction returns the counts of what redaction removed, by rule.
func (e *Envelope) Redaction() redact.Summary { return e.red }

// MarshalJSON returns a copy of the canonical JSON (no newline).
func (e *Envelope) MarshalJSON() ([]byte, error) { return bytes.Clone(e.line), nil }

// AppendLine appends the canonical JSON and a newline: one JSON Lines record.
func (e *Envelope) AppendLine(dst []byte) []byte {
	dst = append(dst, e.line...)
	return append(dst, '\n')
}

// Len is the size of the record AppendLine writes.
func (e *Envelope) Len() int { return len(e.line) + 1 }

// header is an Envelope's fields other than attrs, redaction, seq and id.
type header struct {
	subject, typ, correlation, causation, time string
	role                                       Role
}

const apiPrefix = `{"apiVersion":"` + jsonx.APIVersion + `","attrs":`

// seal builds the envelope's canonical bytes and id in one buffer. RFC 8785
// sorts the top-level keys as apiVersion, attrs, causation, correlation, id,
// kind, redaction, role, seq, subject, time, type, so the bytes without id are
// the bytes with id minus the "id" member: both are built from the same two
// halves and hashed without a second encoding.
func seal(h header, seq uint64, attrs []byte, red redact.Summary) *Envelope {
	n := len(apiPrefix) + len(attrs) + 96 + len(h.subject) + len(h.typ) + len(h.correlation) + len(h.causation) + len(h.time) + 160
	buf := make([]byte, 0, n)
	buf = append(buf, apiPrefix...)
	buf = append(buf, attrs...)
	if h.causation != "" {
		buf = append(buf, `,"causation":`...)
		buf = jsonx.AppendCanonicalString(buf, h.causation)
	}
	if h.correlation != "" {
		buf = append(buf, `,"correlation":`...)
		buf = jsonx.AppendCanonicalString(buf, h.correlation)
	}
	pre := len(buf)
	buf = append(buf, `,"id":"sha256:`...)
	hexAt := len(buf)
	buf = append(buf, make([]byte, 64)...)
	buf = append(buf, `",`...)
	post := len(buf)
	buf = append(buf, `"kind":"Event","redaction":`...)
	buf = red.AppendJSON(buf)
	if h.role != "" {
		buf = append(buf, `,"role":`...)
		buf = jsonx.AppendCanonicalString(buf, string(h.role))
	}
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendUint(buf, seq, 10)
	buf = append(buf, `,"subject":`...)
	buf = jsonx.AppendCanonicalString(buf, h.subject)
	buf = append(buf, `,"time":`...)
	buf = jsonx.AppendCanonicalString(buf, h.time)
	buf = append(buf, `,"type":`...)
	buf = jsonx.AppendCanonicalString(buf, h.typ)
	buf = append(buf, '}')

	d := sha256.New()
	d.Write(buf[:pre])
	d.Write([]byte{','})
	d.Write(buf[post:])
	var sum [sha256.Size]byte
	hex.Encode(buf[hexAt:hexAt+64], d.Sum(sum[:0]))
	attrsStart := len(apiPrefix)
	return &Envelope{
		id:          "sha256:" + string(buf[hexAt:hexAt+64]),
		subject:     h.subject,
		typ:         h.typ,
		role:        h.role,
		correlation: h.correlation,
		causation:   h.causation,
		time:        h.time,
		seq:         seq,
		attrs:       buf[attrsStart : attrsStart+len(attrs) : attrsStart+len(attrs)],
		red:         red,
		line:        buf,
	}
}

// formatTime is the one time format of envelopes: RFC 3339, UTC, with as
// many fractional digits as the time has (Go's RFC3339Nano).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// MaxEnvelopeHeader bounds subject, type, correlation and causation in an
// envelope: redaction markers can make a header longer than the Draft's.
const MaxEnvelopeHeader = vocab.MaxEventHeader

var envelopeParse = jsonx.ParseOptions{MaxDepth: 128, SafeIntegers: true}

// ParseEnvelope reads one envelope strictly, recomputes its id from its
// content and returns it with canonical reporting whether data was already
// its canonical form. A wrong id wraps ErrIDMismatch; every other problem is
// a *jsonx.FieldError under "event" (exit 2).
func ParseEnvelope(data []byte) (env *Envelope, canonical bool, err error) {
	if len(data) > MaxDraftBytes {
		return nil, false, jsonx.Errorf("event", "larger than %d bytes", MaxDraftBytes)
	}
	v, err := jsonx.Parse(data, "event", envelopeParse)
	if err != nil {
		return nil, false, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, jsonx.Errorf("event", "expected object, got %s", kindOf(v))
	}
	var (
		h         header
		id        string
		seq       uint64
		attrs     map[string]any
		red       redact.Summary
		seen      = map[string]bool{}
		apiVer    string
		kind      string
		redacted  bool
		haveAttrs bool
	)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		p := "event." + k
		seen[k] = true
		var err error
		switch k {
		case "apiVersion":
			apiVer, err = strAt(p, val)
		case "kind":
			kind, err = strAt(p, val)
		case "id":
			id, err = strAt(p, val)
		case "subject":
			h.subject, err = strAt(p, val)
		case "type":
			h.typ, err = strAt(p, val)
		case "correlation":
			h.correlation, err = strAt(p, val)
		case "causation":
			h.causation, err = strAt(p, val)
		case "role":
			var s string
			s, err = strAt(p, val)
			h.role = Role(s)
		case "time":
			h.time, err = strAt(p, val)
		case "seq":
			seq, err = uintField(p, val, jsonx.MaxSafeInteger)
		case "attrs":
			attrs, ok = val.(map[string]any)
			if !ok {
				return nil, false, jsonx.Errorf(p, "expected object, got %s", kindOf(val))
			}
			haveAttrs = true
		case "redaction":
			red, err = parseRedaction(p, val)
			redacted = true
		default:
			return nil, false, jsonx.Errorf(p, "unknown field")
		}
		if err != nil {
			return nil, false, err
		}
	}
	if apiVer != jsonx.APIVersion {
		if apiVer == "" {
			return nil, false, jsonx.Errorf("event.apiVersion", "required (want %q)", jsonx.APIVersion)
		}
		return nil, false, jsonx.Errorf("event.apiVersion", "unsupported %q (want %q)", apiVer, jsonx.APIVersion)
	}
	if kind != KindEvent {
		return nil, false, jsonx.Errorf("event.kind", "got %q, want %q", kind, KindEvent)
	}
	for _, f := range []string{"id", "subject", "seq", "type", "time"} {
		if !seen[f] {
			return nil, false, jsonx.Errorf("event."+f, "required")
		}
	}
	if !haveAttrs || !redacted {
		f := "attrs"
		if haveAttrs {
			f = "redaction"
		}
		return nil, false, jsonx.Errorf("event."+f, "required")
	}
	if !validID(id) {
		return nil, false, jsonx.Errorf("event.id", "%q is not sha256: and 64 lower-case hex digits", id)
	}
	if seq == 0 {
		return nil, false, jsonx.Errorf("event.seq", "must be at least 1")
	}
	for _, f := range []struct {
		path, v  string
		required bool
	}{{"event.subject", h.subject, true}, {"event.type", h.typ, true}, {"event.correlation", h.correlation, false}, {"event.causation", h.causation, false}} {
		if err := headerText(f.path, f.v, MaxEnvelopeHeader, f.required); err != nil {
			return nil, false, err
		}
	}
	if !h.role.Valid() {
		return nil, false, jsonx.Errorf("event.role", "unknown role %q", string(h.role))
	}
	if _, err := time.Parse(time.RFC3339Nano, h.time); err != nil {
		return nil, false, jsonx.Errorf("event.time", "%q is not an RFC 3339 time", h.time)
	}
	ab, err := jsonx.AppendCanonical(nil, attrs)
	if err != nil {
		return nil, false, jsonx.Errorf("event.attrs", "%v", err)
	}
	env = seal(h, seq, ab, red)
	if env.id != id {
		return nil, false, exitcode.Wrap(exitcode.Usage, fmt.Errorf("event.id: %s (content hashes to %s): %w", id, env.id, ErrIDMismatch))
	}
	return env, bytes.Equal(env.line, data), nil
}

func uintField(path string, v any, limit uint64) (uint64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, jsonx.Errorf(path, "expected integer, got %s", kindOf(v))
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil || u > limit {
		return 0, jsonx.Errorf(path, "%s is not an integer in 0..%d", n, limit)
	}
	return u, nil
}

func parseRedaction(path string, v any) (redact.Summary, error) {
	var s redact.Summary
	m, ok := v.(map[string]any)
	if !ok {
		return s, jsonx.Errorf(path, "expected object, got %s", kindOf(v))
	}
	var count uint64
	haveCount, haveReasons := false, false
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := path + "." + k
		switch k {
		case "count":
			var err error
			if count, err = uintField(p, m[k], 1<<31); err != nil {
				return s, err
			}
			haveCount = true
		case "reasons":
			rm, ok := m[k].(map[string]any)
			if !ok {
				return s, jsonx.Errorf(p, "expected object, got %s", kindOf(m[k]))
			}
			for _, id := range slices.Sorted(maps.Keys(rm)) {
				r, known := redact.RuleByID(id)
				if !known {
					return s, jsonx.Errorf(p+"."+id, "unknown rule")
				}
				n, err := uintField(p+"."+id, rm[id], 1<<31)
				if err != nil {
					return s, err
				}
				if n == 0 {
					return s, jsonx.Errorf(p+"."+id, "zero counts are left out")
				}
				s.Add(r, int(n))
			}
			haveReasons = true
		default:
			return s, jsonx.Errorf(p, "unknown field")
		}
	}
	if !haveCount || !haveReasons {
		return s, jsonx.Errorf(path, "needs count and reasons")
	}
	if int(count) != s.Count() {
		return s, jsonx.Errorf(path+".count", "%d is not the sum of the reasons (%d)", count, s.Count())
	}
	return s, nil
}

func validID(id string) bool {
	const p = "sha256:"
	if len(id) != len(p)+64 || id[:len(p)] != p {
		return false
	}
	for i := len(p); i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// digest is an id as 32 bytes, the form sinks keep in memory.
type digest [sha256.Size]byte

func digestOf(id string) (digest, bool) {
	var d digest
	if !validID(id) {
		return d, false
	}
	_, err := hex.Decode(d[:], []byte(id[len("sha256:"):]))
	return d, err == nil
}

// peek reads id, subject and seq from a canonical record without a full
// parse: the members after attrs are strings (which cannot contain an
// unescaped quote) and numbers, so the last `,"id":"`, `,"seq":` and
// `,"subject":"` in a well-formed record are the top-level ones. Recovery
// and tail use it; verify parses fully.
func peek(line []byte) (id digest, subject string, seq uint64, ok bool) {
	i := bytes.LastIndex(line, []byte(`,"id":"sha256:`))
	if i < 0 || len(line) < i+14+64 {
		return id, "", 0, false
	}
	if _, err := hex.Decode(id[:], line[i+14:i+14+64]); err != nil {
		return id, "", 0, false
	}
	j := bytes.LastIndex(line, []byte(`,"seq":`))
	if j < i {
		return id, "", 0, false
	}
	k := j + 7
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	seq, err := strconv.ParseUint(string(line[j+7:k]), 10, 64)
	if err != nil || seq == 0 {
		return id, "", 0, false
	}
	s := bytes.LastIndex(line, []byte(`,"subject":"`))
	if s < j {
		return id, "", 0, false
	}
	s += len(`,"subject":"`)
	e := s
	for e < len(line) && line[e] != '"' {
		if line[e] == '\\' {
			e++
		}
		e++
	}
	if e >= len(line) {
		return id, "", 0, false
	}
	raw := line[s:e]
	if bytes.IndexByte(raw, '\\') < 0 {
		return id, string(raw), seq, true
	}
	v, err := jsonx.Parse(line[s-1:e+1], "subject", jsonx.ParseOptions{})
	if err != nil {
		return id, "", 0, false
	}
	subject, ok = v.(string)
	return id, subject, seq, ok
}

func strAt(path string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", jsonx.Errorf(path, "expected string, got %s", kindOf(v))
	}
	return s, nil
}
