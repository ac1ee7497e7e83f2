package obs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Wrap turns arbitrary JSON Lines records (artq log records, artagent
// AgentEvents, anything) into Drafts, so any tool's stream can be piped
// through redaction into a sink:
//
//	some-tool --json | artobs emit --wrap json --subject 'build/{id}' --type 'build.{event}' --sink jsonl:events.jsonl
//
// Each record becomes the attrs of one Draft. Subject, type, correlation and
// causation are templates: literal text with {field} or {field.sub}
// placeholders filled from the record (strings, numbers and booleans; a
// missing field is an error naming the line). The time comes from the
// record's TimeField when it holds an RFC 3339 string, so re-emitting the
// same log gives the same event ids.
type Wrap struct {
	Subject     Template
	Type        Template
	Correlation Template
	Causation   Template
	Role        Role
	TimeField   string // "" disables: events get the current time
	// SubjectElse, if set, is the subject of a record Subject does not fit
	// (a field it names is missing): an artq log record without a task is
	// about the queue itself. Such a record gets no correlation.
	SubjectElse Template
	// Fields fill a template's fields a record lacks: the queue's name,
	// which artq log records do not carry.
	Fields map[string]any
	// Types renames expanded types, so a wrapped stream uses the names its
	// tool's own emitter uses (queue.started is queue.claimed).
	Types map[string]string
}

// Template is a parsed placeholder string.
type Template struct {
	src   string
	parts []tmplPart
}

type tmplPart struct {
	lit   string
	field []string // nil for literal parts
}

// ParseTemplate parses "text {field.path} text"; "{{" and "}}" are literal
// braces.
func ParseTemplate(s string) (Template, error) {
	t := Template{src: s}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return Template{}, fmt.Errorf("template %q: unclosed '{'", s)
			}
			name := s[i+1 : i+end]
			if name == "" {
				return Template{}, fmt.Errorf("template %q: empty field name", s)
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, tmplPart{lit: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, tmplPart{field: strings.Split(name, ".")})
			i += end
		case c == '}':
			return Template{}, fmt.Errorf("template %q: unmatched '}' (write '}}' for a brace)", s)
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, tmplPart{lit: lit.String()})
	}
	return t, nil
}

// String is the template's source.
func (t Template) String() string { return t.src }

// IsZero reports an empty template.
func (t Template) IsZero() bool { return len(t.parts) == 0 }

// Expand fills the template from a record.
func (t Template) Expand(rec map[string]any) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.field == nil {
			b.WriteString(p.lit)
			continue
		}
		var v any = rec
		for _, f := range p.field {
			m, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("field %q is missing", strings.Join(p.field, "."))
			}
			if v, ok = m[f]; !ok {
				return "", fmt.Errorf("field %q is missing", strings.Join(p.field, "."))
			}
		}
		switch v := v.(type) {
		case string:
			b.WriteString(v)
		case json.Number:
			b.WriteString(string(v))
		case bool:
			fmt.Fprint(&b, v)
		default:
			return "", fmt.Errorf("field %q is %s, not a string, number or boolean", strings.Join(p.field, "."), kindOf(v))
		}
	}
	return b.String(), nil
}

// wrapParse is lenient where Drafts are strict: integers beyond 2^53 in a
// foreign record are kept (redaction writes them as strings, counted as
// number-range) rather than refusing a tool's whole log.
var wrapParse = jsonx.ParseOptions{MaxDepth: 128, KeepInvalidUTF8: true}

// Draft makes a Draft from one JSON record (one line).
func (w *Wrap) Draft(line []byte) (Draft, error) {
	if len(line) > MaxDraftBytes {
		return Draft{}, jsonx.Errorf("record", "larger than %d bytes", MaxDraftBytes)
	}
	v, err := jsonx.Parse(line, "record", wrapParse)
	if err != nil {
		return Draft{}, err
	}
	rec, ok := v.(map[string]any)
	if !ok {
		return Draft{}, jsonx.Errorf("record", "expected object, got %s", kindOf(v))
	}
	d := Draft{Role: w.Role, Attrs: rec}
	fields := rec
	if len(w.Fields) > 0 {
		fields = make(map[string]any, len(rec)+len(w.Fields))
		for k, v := range w.Fields {
			fields[k] = v
		}
		for k, v := range rec {
			fields[k] = v
		}
	}
	subject, correlation := w.Subject, w.Correlation
	if !w.SubjectElse.IsZero() {
		if _, err := subject.Expand(fields); err != nil {
			subject, correlation = w.SubjectElse, Template{}
		}
	}
	for _, f := range []struct {
		t   Template
		dst *string
		nm  string
	}{{subject, &d.Subject, "subject"}, {w.Type, &d.Type, "type"}, {correlation, &d.Correlation, "correlation"}, {w.Causation, &d.Causation, "causation"}} {
		if f.t.IsZero() {
			continue
		}
		s, err := f.t.Expand(fields)
		if err != nil {
			return Draft{}, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--%s %q: %w", f.nm, f.t.src, err))
		}
		*f.dst = s
	}
	if t, ok := w.Types[d.Type]; ok {
		d.Type = t
	}
	if w.TimeField != "" {
		if s, ok := rec[w.TimeField].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				d.Time = t
			}
		}
	}
	if err := d.Validate(); err != nil {
		return Draft{}, err
	}
	return d, nil
}
