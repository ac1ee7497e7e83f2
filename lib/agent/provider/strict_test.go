package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// strictKeywords are the JSON Schema keywords OpenAI's strict structured
// outputs document as supported (for the types the decision uses), and
// strictTypes its types. Anything else (minLength, const, default,
// patternProperties, ...) is refused by the hosted API in strict mode.
var (
	strictKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "enum", "description", "anyOf", "$defs", "$ref", "title"}
	strictTypes    = []string{"string", "number", "boolean", "integer", "object", "array", "null"}
)

// checkStrict applies the documented strict-mode rules to a schema: the
// root is an object and not an anyOf; every object lists all its
// properties as required and sets additionalProperties false; only the
// supported keywords and types appear.
func checkStrict(s map[string]any, path string, root bool) []string {
	var bad []string
	if root {
		if s["type"] != "object" {
			bad = append(bad, path+": the root must be type object")
		}
		if _, ok := s["anyOf"]; ok {
			bad = append(bad, path+": the root must not be anyOf")
		}
	}
	for k := range s {
		if !slices.Contains(strictKeywords, k) {
			bad = append(bad, fmt.Sprintf("%s: keyword %q is outside the strict subset", path, k))
		}
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, fmt.Sprint(x))
		}
	}
	for _, t := range types {
		if !slices.Contains(strictTypes, t) {
			bad = append(bad, fmt.Sprintf("%s: type %q", path, t))
		}
	}
	if props, ok := s["properties"].(map[string]any); ok || slices.Contains(types, "object") {
		if s["additionalProperties"] != false {
			bad = append(bad, path+": additionalProperties must be false")
		}
		var req []string
		r, _ := s["required"].([]any)
		for _, x := range r {
			req = append(req, x.(string))
		}
		var names []string
		for n, sub := range props {
			names = append(names, n)
			bad = append(bad, checkStrict(sub.(map[string]any), path+"/properties/"+n, false)...)
		}
		sort.Strings(req)
		sort.Strings(names)
		if !slices.Equal(req, names) {
			bad = append(bad, fmt.Sprintf("%s: required %v must list every property %v", path, req, names))
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		bad = append(bad, checkStrict(items, path+"/items", false)...)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			bad = append(bad, checkStrict(a.(map[string]any), fmt.Sprintf("%s/anyOf/%d", path, i), false)...)
		}
	}
	return bad
}

func TestStrictSchemaSubset(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal([]byte(StrictDecisionSchema), &s); err != nil {
		t.Fatal(err)
	}
	if bad := checkStrict(s, "#", true); len(bad) > 0 {
		t.Fatalf("StrictDecisionSchema breaks strict-mode rules:\n%s", strings.Join(bad, "\n"))
	}
	// The checker is not vacuous: the exact schema breaks the rules.
	var exact map[string]any
	if err := json.Unmarshal([]byte(DecisionSchema), &exact); err != nil {
		t.Fatal(err)
	}
	bad := strings.Join(checkStrict(exact, "#", true), "\n")
	for _, want := range []string{"root must not be anyOf", `"minLength"`, `"const"`, "must list every property"} {
		if !strings.Contains(bad, want) {
			t.Errorf("the checker does not flag %s in DecisionSchema:\n%s", want, bad)
		}
	}
}

// Every reply the strict schema admits for a real decision decodes, with
// null read as absent; the decoder still refuses what the schema cannot
// express (a field that belongs to another action).
func TestStrictSchemaDecodes(t *testing.T) {
	c := jsonschema.NewCompiler()
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(StrictDecisionSchema))
	if err := c.AddResource("strict.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("strict.json")
	if err != nil {
		t.Fatal(err)
	}
	full := func(fields string) string {
		m := map[string]any{"program": nil, "args": nil, "path": nil, "old": nil, "new": nil, "summary": nil, "reason": nil}
		var extra map[string]any
		if err := json.Unmarshal([]byte(fields), &extra); err != nil {
			t.Fatal(err)
		}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, tt := range []struct {
		in, want string // want: the decision's canonical form, or "" for refused
	}{
		{full(`{"action":"run_tool","program":"go","args":["vet"]}`), `{"action":"run_tool","program":"go","args":["vet"]}`},
		{full(`{"action":"read_file","path":"a.go"}`), `{"action":"read_file","path":"a.go"}`},
		{full(`{"action":"replace_text","path":"a.go","old":"x","new":""}`), `{"action":"replace_text","path":"a.go","old":"x","new":""}`},
		{full(`{"action":"verify","reason":"check"}`), `{"action":"verify","reason":"check"}`},
		{full(`{"action":"finish","summary":"done"}`), `{"action":"finish","summary":"done"}`},
		{full(`{"action":"verify","path":"a.go"}`), ""},
		{full(`{"action":"read_file"}`), ""},
		{full(`{"action":"run_tool","program":""}`), ""},
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(tt.in))
		if err := sch.Validate(v); err != nil {
			t.Errorf("strict schema refuses %s: %v", tt.in, err)
		}
		d, err := DecodeDecision([]byte(tt.in))
		if tt.want == "" {
			if err == nil {
				t.Errorf("decoded %s", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if b, _ := json.Marshal(d); string(b) != tt.want {
			t.Errorf("%s decoded to %s; want %s", tt.in, b, tt.want)
		}
	}
}
