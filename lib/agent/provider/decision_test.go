package provider

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

func str(s string) *string { return &s }

func TestDecodeDecision(t *testing.T) {
	tests := []struct {
		in   string
		want Decision
	}{
		{`{"action":"run_tool","program":"go","args":["vet","./..."]}`, Decision{Action: ActionRunTool, Program: "go", Args: []string{"vet", "./..."}}},
		{`{"action":"run_tool","program":"true"}`, Decision{Action: ActionRunTool, Program: "true"}},
		{`{"action":"run_tool","program":"ls","args":null}`, Decision{Action: ActionRunTool, Program: "ls"}},
		{`{"action":"read_file","path":"a.go","reason":"look"}`, Decision{Action: ActionReadFile, Path: "a.go", Reason: "look"}},
		{`{"action":"replace_text","path":"a.go","old":"a","new":""}`, Decision{Action: ActionReplaceText, Path: "a.go", Old: "a", New: str("")}},
		{`{"action":"verify"}`, Decision{Action: ActionVerify}},
		{` {"action":"finish","summary":""} `, Decision{Action: ActionFinish}},
		{`{"apiVersion":"art/v1alpha1","kind":"Decision","action":"verify"}`, Decision{APIVersion: "art/v1alpha1", Kind: "Decision", Action: ActionVerify}},
	}
	for _, tt := range tests {
		got, err := DecodeDecision([]byte(tt.in))
		if err != nil {
			t.Errorf("DecodeDecision(%s) error %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("DecodeDecision(%s) = %+v; want %+v", tt.in, *got, tt.want)
		}
	}
}

func TestDecodeDecisionRefuses(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, "decision: unexpected end of input"},
		{`not json`, "decision: invalid JSON"},
		{`[]`, "decision: expected object, got array"},
		{`{}`, "decision.action: required"},
		{`{"action":"launch"}`, `decision.action: unknown action "launch"`},
		{`{"action":"RUN_TOOL","program":"go"}`, `unknown action "RUN_TOOL"`},
		{`{"action":"run_tool"}`, "decision.program: required for action run_tool"},
		{`{"action":"run_tool","program":""}`, "decision.program: must not be empty"},
		{`{"action":"run_tool","program":"go","args":"vet"}`, "decision.args: expected array"},
		{`{"action":"run_tool","program":"go","args":[1]}`, "decision.args[0]: expected string"},
		{`{"action":"run_tool","program":"go","path":"a"}`, "decision.path: not allowed for action run_tool"},
		{`{"action":"verify","summary":"x"}`, "decision.summary: not allowed for action verify"},
		{`{"action":"read_file"}`, "decision.path: required for action read_file"},
		{`{"action":"replace_text","path":"a","old":"x"}`, "decision.new: required for action replace_text"},
		{`{"action":"finish"}`, "decision.summary: required for action finish"},
		{`{"action":"verify","Action":"verify"}`, "decision.Action: unknown field"},
		{`{"action":"verify","extra":1}`, "decision.extra: unknown field"},
		{`{"action":"verify","action":"finish"}`, "decision.action: duplicate key"},
		{`{"action":"verify"} {"action":"verify"}`, "decision: trailing data"},
		{`{"action":"verify","apiVersion":"v2"}`, "decision.apiVersion: unsupported"},
		{`{"action":"verify","kind":"Task"}`, "decision.kind: got \"Task\""},
		{"```json\n{\"action\":\"verify\"}\n```", "decision: invalid JSON"},
	}
	for _, tt := range tests {
		_, err := DecodeDecision([]byte(tt.in))
		var fe *jsonx.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeDecision(%q) error %v; want a field error containing %q", tt.in, err, tt.want)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("DecodeDecision(%q) exit code %d", tt.in, exitcode.Of(err))
		}
	}
}

func TestDecisionMarshalRoundTrip(t *testing.T) {
	for _, d := range []Decision{
		{Action: ActionRunTool, Program: "go", Args: []string{"vet", "<&>"}, Reason: "r"},
		{Action: ActionReplaceText, Path: "a.go", Old: "x", New: str("")},
		{Action: ActionReplaceText, Path: "a.go", Old: "x"}, // nil New encodes as ""
		{Action: ActionFinish},
		{Action: ActionVerify, Path: "ignored", Summary: "ignored"},
	} {
		b, err := jsonx.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeDecision(b)
		if err != nil {
			t.Fatalf("decode of %s: %v", b, err)
		}
		b2, _ := jsonx.Marshal(back)
		if string(b) != string(b2) {
			t.Errorf("round trip %s → %s", b, b2)
		}
	}
	b, _ := jsonx.Marshal(Decision{Action: ActionRunTool, Program: "go", Args: []string{"<&>"}})
	if want := `{"action":"run_tool","program":"go","args":["<&>"]}`; string(b) != want {
		t.Errorf("Marshal = %s; want %s", b, want)
	}
}

// The schema file is the model schema plus the optional header: no drift.
func TestDecisionSchemaParity(t *testing.T) {
	file := schematest.Load(t, "decision.schema.json")
	var model map[string]any
	if err := json.Unmarshal([]byte(DecisionSchema), &model); err != nil {
		t.Fatalf("DecisionSchema is not JSON: %v", err)
	}
	fv := file["anyOf"].([]any)
	mv := model["anyOf"].([]any)
	if len(fv) != len(Actions) || len(mv) != len(Actions) {
		t.Fatalf("variants: file %d, model %d, actions %d", len(fv), len(mv), len(Actions))
	}
	for i := range fv {
		f := fv[i].(map[string]any)
		props := f["properties"].(map[string]any)
		delete(props, "apiVersion")
		delete(props, "kind")
		if !reflect.DeepEqual(f, mv[i]) {
			t.Errorf("variant %d differs:\nfile  %v\nmodel %v", i, f, mv[i])
		}
		if c := mv[i].(map[string]any)["properties"].(map[string]any)["action"].(map[string]any)["const"]; c != string(Actions[i]) {
			t.Errorf("variant %d is for %v; want %s", i, c, Actions[i])
		}
		// Every field the variant names is one the Go type has.
		goFields := map[string]bool{}
		rt := reflect.TypeOf(Decision{})
		for j := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(j).Tag.Get("json"), ",")
			goFields[name] = true
		}
		for p := range mv[i].(map[string]any)["properties"].(map[string]any) {
			if !goFields[p] {
				t.Errorf("schema property %q is not a Decision field", p)
			}
		}
	}
}

func compileModelSchema(t testing.TB) *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(DecisionSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("decision.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("decision.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzDecodeDecision: no panic; every refusal is a field error; what the
// decoder accepts re-encodes to a fixed point; and the decoder and the
// published schema agree (modulo what a schema cannot see: duplicate keys).
func FuzzDecodeDecision(f *testing.F) {
	for _, s := range []string{
		`{"action":"run_tool","program":"go","args":["vet","./..."]}`,
		`{"action":"read_file","path":"a.go"}`,
		`{"action":"replace_text","path":"a.go","old":"x","new":"y","reason":"r"}`,
		`{"action":"verify"}`, `{"action":"finish","summary":"done"}`,
		`{"action":"verify","action":"verify"}`, `{"error":"boom"}`, `{"action":1}`,
		`{"apiVersion":"art/v1alpha1","kind":"Decision","action":"verify"}`, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	file := schematest.Compile(f, "decision.schema.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDecision(data)
		var fe *jsonx.FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("DecodeDecision(%q) error %v is not a field error", data, err)
		}
		doc, jerr := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
		if err == nil {
			b, merr := jsonx.Marshal(d)
			if merr != nil {
				t.Fatal(merr)
			}
			d2, err2 := DecodeDecision(b)
			if err2 != nil || !reflect.DeepEqual(d, d2) {
				t.Fatalf("re-decode of %s: %+v, %v; want %+v", b, d2, err2, d)
			}
			if jerr == nil {
				if verr := file.Validate(doc); verr != nil {
					t.Fatalf("decoder accepted %s but the schema refuses it: %v", data, verr)
				}
			}
			return
		}
		if jerr == nil && !strings.Contains(err.Error(), "duplicate key") && !strings.Contains(err.Error(), "must not be empty") {
			if verr := file.Validate(doc); verr == nil {
				t.Fatalf("schema accepts %s but the decoder refuses it: %v", data, err)
			}
		}
	})
}

// The schema sent to models compiles and says the same as the decoder on
// the examples of docs/artagent.md.
func TestModelSchema(t *testing.T) {
	s := compileModelSchema(t)
	for _, in := range []string{
		`{"action":"run_tool","program":"go","args":["vet","./..."]}`,
		`{"action":"read_file","path":"a.go"}`,
		`{"action":"replace_text","path":"a.go","old":"x","new":""}`,
		`{"action":"verify"}`,
		`{"action":"finish","summary":"done","reason":"tests pass"}`,
	} {
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(in))
		if err := s.Validate(doc); err != nil {
			t.Errorf("model schema refuses %s: %v", in, err)
		}
	}
	for _, in := range []string{
		`{"action":"verify","path":"a"}`, `{"action":"run_tool"}`, `{"action":"x"}`,
	} {
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(in))
		if err := s.Validate(doc); err == nil {
			t.Errorf("model schema accepts %s", in)
		}
	}
}

func TestRequestSchemaParity(t *testing.T) {
	s := schematest.Load(t, "decision-request.schema.json")
	c := schematest.Compile(t, "decision-request.schema.json")
	schematest.Fields(t, s, "", reflect.TypeFor[Request]())
	schematest.Fields(t, s, "/$defs/Turn", reflect.TypeFor[Turn]())
	schematest.Const(t, s, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, s, "/properties/kind", KindRequest)
	r := NewRequest()
	r.Task, r.Step, r.MaxSteps, r.Allow, r.Verify = "t", 1, 30, []string{}, []string{"go", "test"}
	r.History = []Turn{{Step: 1, Reply: "x", Observation: "y"}}
	b, err := jsonx.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, c, "request", b)
}
