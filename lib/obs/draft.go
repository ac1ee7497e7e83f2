package obs

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// Draft is what a tool observed, before redaction. Its attributes are raw:
// they may hold anything the tool saw, secrets included. A Draft never leaves
// the process; the Envelope made from it does.
type Draft struct {
	jsonx.TypeMeta
	// Subject names the stream the event belongs to ("task/01J…",
	// "goal/release-1"); sequence numbers count per subject.
	Subject string `json:"subject"`
	// Type names what happened ("task.started", "queue.enqueued").
	Type string `json:"type"`
	// Time is when it happened; zero means now.
	Time        time.Time `json:"time,omitzero"`
	Role        Role      `json:"role,omitempty"`
	Correlation string    `json:"correlation,omitempty"`
	Causation   string    `json:"causation,omitempty"`
	// Sensitive lists attribute paths ("attrs.request.body",
	// "attrs.headers[*].value") masked whole whatever they hold.
	Sensitive []string       `json:"sensitive,omitempty"`
	Attrs     map[string]any `json:"attrs,omitempty"`
}

// DocumentKind implements jsonx.Document.
func (*Draft) DocumentKind() string { return KindDraft }

// Header limits. Header fields are not redacted into markers wholesale like
// attributes; they are bounded here and scanned by the text rules.
const (
	MaxSubject   = 256
	MaxType      = 128
	MaxLink      = 256 // correlation, causation
	MaxSensitive = 64
	// MaxDraftBytes bounds one Draft or Envelope document (a JSON Lines line).
	MaxDraftBytes = 1 << 20
)

// draftParse: drafts keep invalid UTF-8 (the redactor counts it as binary)
// and refuse integers a double cannot hold.
var draftParse = jsonx.ParseOptions{MaxDepth: 128, KeepInvalidUTF8: true, SafeIntegers: true}

// DecodeDraft reads one Draft document strictly: apiVersion and kind,
// exact field names and types, no duplicate keys, no NaN (not JSON), no
// infinite numbers, no integer literals beyond 2^53, nothing after the
// document; then the header is validated. Errors are *jsonx.FieldError
// (exit 2) naming the field path under "draft".
func DecodeDraft(data []byte) (*Draft, error) {
	if len(data) > MaxDraftBytes {
		return nil, jsonx.Errorf("draft", "larger than %d bytes", MaxDraftBytes)
	}
	v, err := jsonx.Parse(data, "draft", draftParse)
	if err != nil {
		return nil, err
	}
	return draftFromValue(v)
}

func draftFromValue(v any) (*Draft, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, jsonx.Errorf("draft", "expected object, got %s", kindOf(v))
	}
	d := &Draft{}
	if err := d.fill(m, false); err != nil {
		// Report the first problem in key order, not in map order, so the
		// same input always gets the same message.
		return nil, (&Draft{}).fill(m, true)
	}
	if d.APIVersion == "" {
		return nil, jsonx.Errorf("draft.apiVersion", "required (want %q)", jsonx.APIVersion)
	}
	if d.APIVersion != jsonx.APIVersion {
		return nil, jsonx.Errorf("draft.apiVersion", "unsupported %q (want %q)", d.APIVersion, jsonx.APIVersion)
	}
	if d.Kind != KindDraft {
		return nil, jsonx.Errorf("draft.kind", "got %q, want %q", d.Kind, KindDraft)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// fill sets d's fields from a decoded object. Field paths are built only
// for errors: this runs once per Draft of a stream.
func (d *Draft) fill(m map[string]any, sorted bool) error {
	set := func(k string, val any) error {
		var err error
		switch k {
		case "apiVersion":
			d.APIVersion, err = str(k, val)
		case "kind":
			d.Kind, err = str(k, val)
		case "subject":
			d.Subject, err = str(k, val)
		case "type":
			d.Type, err = str(k, val)
		case "role":
			var s string
			s, err = str(k, val)
			d.Role = Role(s)
		case "correlation":
			d.Correlation, err = str(k, val)
		case "causation":
			d.Causation, err = str(k, val)
		case "time":
			var s string
			if s, err = str(k, val); err == nil {
				if d.Time, err = time.Parse(time.RFC3339Nano, s); err != nil {
					err = jsonx.Errorf("draft.time", "%q is not an RFC 3339 time", s)
				}
			}
		case "sensitive":
			arr, isArr := val.([]any)
			if !isArr {
				return jsonx.Errorf("draft.sensitive", "expected array, got %s", kindOf(val))
			}
			for i, e := range arr {
				s, ok := e.(string)
				if !ok {
					return jsonx.Errorf("draft.sensitive["+strconv.Itoa(i)+"]", "expected string, got %s", kindOf(e))
				}
				d.Sensitive = append(d.Sensitive, s)
			}
		case "attrs":
			if val == nil {
				return nil
			}
			attrs, isObj := val.(map[string]any)
			if !isObj {
				return jsonx.Errorf("draft.attrs", "expected object, got %s", kindOf(val))
			}
			d.Attrs = attrs
		default:
			return jsonx.Errorf("draft."+k, "unknown field")
		}
		return err
	}
	if sorted {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := set(k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	for k, val := range m {
		if err := set(k, val); err != nil {
			return err
		}
	}
	return nil
}

// str is a Draft's string field (named without the "draft." root).
func str(field string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", jsonx.Errorf("draft."+field, "expected string, got %s", kindOf(v))
	}
	return s, nil
}

func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number " + string(v)
	}
	return "value"
}

// Validate checks the header of a Draft built in Go or decoded from JSON.
// The apiVersion/kind header is optional in Go; when set it must be right.
func (d *Draft) Validate() error {
	if d.APIVersion != "" && d.APIVersion != jsonx.APIVersion {
		return jsonx.Errorf("draft.apiVersion", "unsupported %q (want %q)", d.APIVersion, jsonx.APIVersion)
	}
	if d.Kind != "" && d.Kind != KindDraft {
		return jsonx.Errorf("draft.kind", "got %q, want %q", d.Kind, KindDraft)
	}
	if err := headerText("draft.subject", d.Subject, MaxSubject, true); err != nil {
		return err
	}
	if err := headerText("draft.type", d.Type, MaxType, true); err != nil {
		return err
	}
	for i := 0; i < len(d.Type); i++ {
		if c := d.Type[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':' || c == '/') {
			return jsonx.Errorf("draft.type", "%q: only letters, digits and . _ - : / are allowed", d.Type)
		}
	}
	if err := headerText("draft.correlation", d.Correlation, MaxLink, false); err != nil {
		return err
	}
	if err := headerText("draft.causation", d.Causation, MaxLink, false); err != nil {
		return err
	}
	if !d.Role.Valid() {
		return jsonx.Errorf("draft.role", "unknown role %q (want one of brain, orchestrator, dispatcher, worker, runtime)", string(d.Role))
	}
	if !d.Time.IsZero() && (d.Time.UTC().Year() < 1 || d.Time.UTC().Year() > 9999) {
		return jsonx.Errorf("draft.time", "year %d is outside 0001..9999", d.Time.UTC().Year())
	}
	if len(d.Sensitive) > MaxSensitive {
		return jsonx.Errorf("draft.sensitive", "more than %d paths", MaxSensitive)
	}
	for i, s := range d.Sensitive {
		if _, err := redact.ParsePath(s); err != nil {
			return jsonx.Errorf("draft.sensitive["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
	return nil
}

func headerText(path, s string, limit int, required bool) error {
	if s == "" {
		if required {
			return jsonx.Errorf(path, "required")
		}
		return nil
	}
	if len(s) > limit {
		return jsonx.Errorf(path, "longer than %d bytes", limit)
	}
	if !utf8.ValidString(s) {
		return jsonx.Errorf(path, "not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return jsonx.Errorf(path, "contains a control character")
		}
	}
	return nil
}
