package obs

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// eventWire is the JSON shape seal writes; the parity test locks it to
// schemas/event.schema.json, and validating real envelopes against the
// schema (additionalProperties: false) locks seal to it.
type eventWire struct {
	jsonx.TypeMeta
	ID          string          `json:"id"`
	Subject     string          `json:"subject"`
	Seq         uint64          `json:"seq"`
	Type        string          `json:"type"`
	Time        string          `json:"time"`
	Role        Role            `json:"role,omitempty"`
	Correlation string          `json:"correlation,omitempty"`
	Causation   string          `json:"causation,omitempty"`
	Attrs       json.RawMessage `json:"attrs"`
	Redaction   redactionWire   `json:"redaction"`
}

type redactionWire struct {
	Count   int            `json:"count"`
	Reasons map[string]int `json:"reasons"`
}

func roleStrings() []string {
	var s []string
	for _, r := range Roles {
		s = append(s, string(r))
	}
	return s
}

func TestSchemaParity(t *testing.T) {
	d := schematest.Load(t, "draft.schema.json")
	e := schematest.Load(t, "event.schema.json")
	schematest.Fields(t, d, "", reflect.TypeFor[Draft]())
	schematest.Fields(t, e, "", reflect.TypeFor[eventWire]())
	schematest.Fields(t, e, "/$defs/Redaction", reflect.TypeFor[redactionWire]())
	schematest.Const(t, d, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, d, "/properties/kind", KindDraft)
	schematest.Const(t, e, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, e, "/properties/kind", KindEvent)
	schematest.Enum(t, d, "/$defs/Role", roleStrings())
	schematest.Enum(t, e, "/$defs/Role", roleStrings())
	// Rule ids follow the rule set (gitleaks' ids change with its version),
	// so the schema gives their form; every id in force must have it.
	rulePat := regexp.MustCompile(schematest.Node(t, e, "/$defs/Rule")["pattern"].(string))
	for _, id := range redact.RuleIDs() {
		if !rulePat.MatchString(id) || len(id) > 64 {
			t.Errorf("rule id %q does not match the schema's /$defs/Rule", id)
		}
	}
	for _, c := range []struct {
		s       map[string]any
		pointer string
		key     string
		want    int
	}{
		{d, "/properties/subject", "maxLength", MaxSubject},
		{d, "/properties/type", "maxLength", MaxType},
		{d, "/properties/correlation", "maxLength", MaxLink},
		{d, "/properties/causation", "maxLength", MaxLink},
		{d, "/properties/sensitive", "maxItems", MaxSensitive},
		{e, "/properties/subject", "maxLength", MaxEnvelopeHeader},
		{e, "/properties/seq", "maximum", jsonx.MaxSafeInteger},
	} {
		if got, _ := schematest.Node(t, c.s, c.pointer)[c.key].(float64); int(got) != c.want {
			t.Errorf("schema %s %s = %v; Go has %d", c.pointer, c.key, got, c.want)
		}
	}
}

func TestSchemaValidatesRealDocuments(t *testing.T) {
	ds := schematest.Compile(t, "draft.schema.json")
	es := schematest.Compile(t, "event.schema.json")
	em := New(Options{HMACKey: []byte("0123456789abcdef")})
	drafts := []string{
		`{` + head + `"subject":"task/1","type":"task.started"}`,
		`{` + head + `"subject":"goal/g","type":"goal.updated","time":"2024-05-01T12:00:00Z","role":"orchestrator","correlation":"c","causation":"sha256:` + strings.Repeat("a", 64) + `","sensitive":["attrs.a[0].b","attrs.*.c","attrs.l[*]"],"attrs":{"a":[{"b":"x"}],"token":"ghp_0123456789abcdefghijABCDEFGHIJ012345","big":1e300}}`,
	}
	for _, in := range drafts {
		schematest.Validate(t, ds, "draft", []byte(in))
		d, err := DecodeDraft([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		env, err := em.Seal(*d, 3)
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, es, "event", env.line)
	}
	// A Go draft with every header field, and the redaction summary filled.
	env, err := em.Seal(Draft{Subject: "AKIAIOSFODNN7EXAMPLE", Type: "t", Time: time.Now(), Role: RoleBrain,
		Correlation: "https://u:p@h/", Causation: "c", Attrs: map[string]any{"f": func() {}, "n": []byte("x")}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, es, "event", env.line)
	// Documents the decoder refuses for structural reasons, the schema
	// refuses too.
	for _, in := range []string{
		`{` + head + `"subject":"s","type":"t","extra":1}`,
		`{` + head + `"type":"t"}`,
		`{` + head + `"subject":"s","type":"a b"}`,
		`{` + head + `"subject":"s","type":"t","role":"boss"}`,
		`{` + head + `"subject":"s","type":"t","sensitive":["body"]}`,
		`{` + head + `"subject":"s","type":"t","attrs":[]}`,
		`{` + head + `"subject":"a\u0001","type":"t"}`,
	} {
		if _, err := DecodeDraft([]byte(in)); err == nil {
			t.Errorf("decoder accepted %s", in)
		}
		doc, err := jsonschemaDoc(in)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Validate(doc) == nil {
			t.Errorf("schema accepted %s", in)
		}
	}
}

func jsonschemaDoc(s string) (any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	err := dec.Decode(&v)
	return v, err
}
