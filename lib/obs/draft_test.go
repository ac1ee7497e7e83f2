package obs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

const head = `"apiVersion":"art/v1alpha1","kind":"Draft",`

func TestDecodeDraft(t *testing.T) {
	d, err := DecodeDraft([]byte(`{` + head + `"subject":"task/1","type":"task.started","time":"2024-05-01T12:00:00.5+02:00","role":"worker","correlation":"run-7","causation":"sha256:00","sensitive":["attrs.body"],"attrs":{"n":9007199254740992,"s":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "task/1" || d.Type != "task.started" || d.Role != RoleWorker || d.Correlation != "run-7" ||
		d.Causation != "sha256:00" || len(d.Sensitive) != 1 || d.Attrs["s"] != "x" || !d.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 5e8, time.UTC)) {
		t.Errorf("DecodeDraft = %+v", d)
	}
	// The Go struct and the decoder agree on every field: a Draft written by
	// encoding/json decodes back to itself.
	b, err := jsonx.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := DecodeDraft(b)
	if err != nil {
		t.Fatalf("DecodeDraft(Marshal(d)) = %v: %s", err, b)
	}
	b2, _ := jsonx.Marshal(d2)
	if string(b) != string(b2) {
		t.Errorf("round trip:\n%s\n%s", b, b2)
	}
}

func TestDecodeDraftRefusals(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"duplicate key", `{` + head + `"subject":"s","type":"t","attrs":{"a":1,"a":2}}`, "draft.attrs.a: duplicate key"},
		{"duplicate header key", `{` + head + `"subject":"s","subject":"t","type":"t"}`, "draft.subject: duplicate key"},
		{"NaN", `{` + head + `"subject":"s","type":"t","attrs":{"a":NaN}}`, "draft.attrs.a: invalid JSON"},
		{"infinite", `{` + head + `"subject":"s","type":"t","attrs":{"a":-1e999}}`, "draft.attrs.a: number -1e999 is not finite"},
		{"beyond 2^53", `{` + head + `"subject":"s","type":"t","attrs":{"l":[9007199254740993]}}`, "draft.attrs.l[0]: integer 9007199254740993 is beyond"},
		{"unknown field", `{` + head + `"subject":"s","type":"t","atrs":{}}`, "draft.atrs: unknown field"},
		{"missing subject", `{` + head + `"type":"t"}`, "draft.subject: required"},
		{"missing type", `{` + head + `"subject":"s"}`, "draft.type: required"},
		{"bad type chars", `{` + head + `"subject":"s","type":"a b"}`, "draft.type: \"a b\": only letters"},
		{"control char in subject", `{` + head + `"subject":"a\nb","type":"t"}`, "draft.subject: contains a control character"},
		{"binary subject", "{" + head + "\"subject\":\"a\xffb\",\"type\":\"t\"}", "draft.subject: not valid UTF-8"},
		{"long subject", `{` + head + `"subject":"` + strings.Repeat("s", 257) + `","type":"t"}`, "draft.subject: longer than 256 bytes"},
		{"bad role", `{` + head + `"subject":"s","type":"t","role":"boss"}`, `draft.role: unknown role "boss"`},
		{"bad time", `{` + head + `"subject":"s","type":"t","time":"yesterday"}`, `draft.time: "yesterday" is not an RFC 3339 time`},
		{"bad sensitive", `{` + head + `"subject":"s","type":"t","sensitive":["body"]}`, `draft.sensitive[0]: "body" must start with "attrs."`},
		{"sensitive not strings", `{` + head + `"subject":"s","type":"t","sensitive":[1]}`, `draft.sensitive[0]: expected string, got number 1`},
		{"attrs not object", `{` + head + `"subject":"s","type":"t","attrs":[]}`, "draft.attrs: expected object, got array"},
		{"wrong kind", `{"apiVersion":"art/v1alpha1","kind":"Event","subject":"s","type":"t"}`, `draft.kind: got "Event", want "Draft"`},
		{"wrong version", `{"apiVersion":"art/v2","kind":"Draft","subject":"s","type":"t"}`, `draft.apiVersion: unsupported "art/v2"`},
		{"no version", `{"kind":"Draft","subject":"s","type":"t"}`, `draft.apiVersion: required`},
		{"trailing", `{` + head + `"subject":"s","type":"t"} x`, "draft: trailing data"},
		{"not an object", `[1]`, "draft: expected object, got array"},
	}
	for _, tt := range tests {
		_, err := DecodeDraft([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: DecodeDraft = %v; want error containing %q", tt.name, err, tt.want)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: exit code %d; want 2", tt.name, exitcode.Of(err))
		}
	}
}

func TestSealIDIsHashOfCanonicalWithoutID(t *testing.T) {
	e := New(Options{}, NewMemory())
	env, err := e.Seal(Draft{Subject: "task/é", Type: "task.finished", Time: time.Unix(1700000000, 123).UTC(),
		Role: RoleRuntime, Correlation: "run-1", Causation: "sha256:abc",
		Attrs: map[string]any{"exit_code": 0, "z": []any{1.5, "\u2028"}, "token": "hunter2"}}, 7)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(env.line, &m); err != nil {
		t.Fatal(err)
	}
	id := m["id"].(string)
	delete(m, "id")
	c, err := jsonx.AppendCanonical(nil, toJSONNumbers(m))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	if want := "sha256:" + hex.EncodeToString(sum[:]); id != want || env.ID() != want {
		t.Errorf("id = %s; sha256 of the canonical envelope without id = %s", id, want)
	}
	// The record itself is canonical.
	if canon, err := jsonx.Canonical(env.line); err != nil || string(canon) != string(env.line) {
		t.Errorf("record is not canonical:\n%s\n%s (%v)", env.line, canon, err)
	}
	if strings.Contains(string(env.line), "hunter2") {
		t.Errorf("secret in envelope: %s", env.line)
	}
	if env.Redaction().Of(redact.UnsafeKey) != 1 || env.Seq() != 7 || env.Subject() != "task/é" || env.TimeString() != "2023-11-14T22:13:20.000000123Z" {
		t.Errorf("envelope fields: %s", env.line)
	}
}

// toJSONNumbers turns encoding/json's float64s back into json.Number so the
// canonicaliser sees the same numbers.
func toJSONNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = toJSONNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = toJSONNumbers(e)
		}
	}
	return v
}

func TestParseEnvelope(t *testing.T) {
	e := New(Options{}, NewMemory())
	env, err := e.Seal(Draft{Subject: "s", Type: "t", Time: time.Unix(1, 0), Attrs: map[string]any{"a": "b"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	back, canonical, err := ParseEnvelope(env.line)
	if err != nil || !canonical || back.ID() != env.ID() || string(back.line) != string(env.line) {
		t.Fatalf("ParseEnvelope(own line) = %v, %v, %v", back, canonical, err)
	}
	// Same content, other spelling: still valid, not canonical.
	var m map[string]any
	_ = json.Unmarshal(env.line, &m)
	pretty, _ := json.MarshalIndent(m, "", "  ")
	back, canonical, err = ParseEnvelope(pretty)
	if err != nil || canonical || back.ID() != env.ID() {
		t.Errorf("ParseEnvelope(pretty) = %v, canonical %v; want same id, not canonical", err, canonical)
	}
	// Tampered content keeps its old id: refused.
	tampered := strings.Replace(string(env.line), `"a":"b"`, `"a":"c"`, 1)
	if _, _, err := ParseEnvelope([]byte(tampered)); !errors.Is(err, ErrIDMismatch) || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("tampered: %v; want ErrIDMismatch exit 2", err)
	}
	for _, bad := range []string{
		`{}`,
		strings.Replace(string(env.line), `"seq":1`, `"seq":0`, 1),
		strings.Replace(string(env.line), `"kind":"Event"`, `"kind":"Draft"`, 1),
		strings.Replace(string(env.line), `"count":0`, `"count":1`, 1),
		strings.Replace(string(env.line), `"reasons":{}`, `"reasons":{"nope":1}`, 1),
		strings.Replace(string(env.line), `"type":"t"`, `"type":"t","extra":1`, 1),
	} {
		if _, _, err := ParseEnvelope([]byte(bad)); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ParseEnvelope(%s) = %v; want a usage error", bad, err)
		}
	}
	id, subject, seq, ok := peek(env.line)
	if d, _ := digestOf(env.id); !ok || id != d || subject != "s" || seq != 1 {
		t.Errorf("peek = %x %q %d %v", id, subject, seq, ok)
	}
	env2, _ := e.Seal(Draft{Subject: `quo"te\back`, Type: "t", Time: time.Unix(1, 0), Attrs: map[string]any{"id": "sha256:" + strings.Repeat("0", 64), "seq": 99, "subject": "fake"}}, 3)
	if _, subject, seq, ok := peek(env2.line); !ok || subject != `quo"te\back` || seq != 3 {
		t.Errorf("peek with escapes and decoy attrs = %q %d %v", subject, seq, ok)
	}
}

// FuzzDecodeDraft: any input either is refused with exit 2, or decodes to a
// Draft that seals to a valid, bounded, canonical envelope that parses back
// to itself and passes CheckRedacted.
func FuzzDecodeDraft(f *testing.F) {
	f.Add(`{` + head + `"subject":"task/1","type":"task.started","attrs":{"token":"x","l":[1,2.5,"ghp_0123456789abcdefghijABCDEFGHIJ0123"]}}`)
	f.Add(`{` + head + `"subject":"s","type":"t","sensitive":["attrs.a[*].b"],"attrs":{"a":[{"b":1}]}}`)
	f.Add(`{` + head + `"subject":"s","type":"t","attrs":{"x":"\ud800","y":1e20}}`)
	f.Add(`{` + head + `"subject":"AKIAIOSFODNN7EXAMPLE","type":"t","correlation":"https://u:p@h/"}`)
	e := New(Options{Limits: redact.Limits{Total: 4096, String: 512}})
	f.Fuzz(func(t *testing.T, in string) {
		d, err := DecodeDraft([]byte(in))
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("DecodeDraft(%q) error %v exit %d; want 2", in, err, exitcode.Of(err))
			}
			return
		}
		env, err := e.Seal(*d, 1)
		if err != nil {
			t.Fatalf("Seal of a decoded draft failed: %v", err)
		}
		if len(env.attrs) > 4096 || !json.Valid(env.line) {
			t.Fatalf("unbounded or invalid envelope: %s", env.line)
		}
		back, canonical, err := ParseEnvelope(env.line)
		if err != nil || !canonical || back.ID() != env.ID() {
			t.Fatalf("envelope does not parse back: %v %v\n%s", err, canonical, env.line)
		}
		if err := CheckRedacted(e.red, env); err != nil {
			t.Fatalf("envelope is not a redaction fixed point: %v\n%s", err, env.line)
		}
	})
}
