package provider

import (
	"fmt"
	"strings"

	"github.com/art-runtime/art/lib/jsonx"
)

// KindDecision is the optional kind of a Decision document.
const KindDecision = "Decision"

// Action names what a decision asks for.
type Action string

// The five actions (docs/artagent.md).
const (
	ActionRunTool     Action = "run_tool"
	ActionReadFile    Action = "read_file"
	ActionReplaceText Action = "replace_text"
	ActionVerify      Action = "verify"
	ActionFinish      Action = "finish"
)

// Actions lists every action, for schemas, prompts and parity tests.
var Actions = []Action{ActionRunTool, ActionReadFile, ActionReplaceText, ActionVerify, ActionFinish}

// Decision is one requested action, as a flat JSON object:
//
//	{"action":"run_tool","program":"go","args":["vet","./..."]}
//	{"action":"read_file","path":"a.go"}
//	{"action":"replace_text","path":"a.go","old":"…","new":"…"}
//	{"action":"verify"}
//	{"action":"finish","summary":"…"}
//
// each with an optional "reason". A model need not send apiVersion and
// kind; when it does they must be right.
type Decision struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Action     Action   `json:"action"`
	Program    string   `json:"program,omitempty"`
	Args       []string `json:"args,omitempty"`
	Path       string   `json:"path,omitempty"`
	Old        string   `json:"old,omitempty"`
	New        *string  `json:"new,omitempty"` // present (possibly empty) exactly for replace_text
	Summary    string   `json:"summary,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// rawDecision records which fields were present, to refuse a field that
// does not belong to the action.
type rawDecision struct {
	APIVersion *string   `json:"apiVersion"`
	Kind       *string   `json:"kind"`
	Action     *string   `json:"action"`
	Program    *string   `json:"program"`
	Args       *[]string `json:"args"`
	Path       *string   `json:"path"`
	Old        *string   `json:"old"`
	New        *string   `json:"new"`
	Summary    *string   `json:"summary"`
	Reason     *string   `json:"reason"`
}

// fields of each action: required, then optional (reason is always optional).
var actionFields = map[Action]struct{ required, optional []string }{
	ActionRunTool:     {[]string{"program"}, []string{"args"}},
	ActionReadFile:    {[]string{"path"}, nil},
	ActionReplaceText: {[]string{"path", "old", "new"}, nil},
	ActionVerify:      {nil, nil},
	ActionFinish:      {[]string{"summary"}, nil},
}

// DecodeDecision decodes one decision strictly: one JSON object, exact
// field names, no unknown or duplicate fields, no trailing data, a known
// action, every field the action needs and none it does not. Errors are
// *jsonx.FieldError naming the field ("decision.path: not allowed for
// action verify").
func DecodeDecision(data []byte) (*Decision, error) {
	var raw rawDecision
	if err := jsonx.Unmarshal(data, "decision", &raw); err != nil {
		return nil, err
	}
	if raw.APIVersion != nil && *raw.APIVersion != jsonx.APIVersion {
		return nil, jsonx.Errorf("decision.apiVersion", "unsupported %q (want %q or leave it out)", *raw.APIVersion, jsonx.APIVersion)
	}
	if raw.Kind != nil && *raw.Kind != KindDecision {
		return nil, jsonx.Errorf("decision.kind", "got %q, want %q or leave it out", *raw.Kind, KindDecision)
	}
	if raw.Action == nil {
		return nil, jsonx.Errorf("decision.action", "required (one of %s)", actionList())
	}
	a := Action(*raw.Action)
	spec, ok := actionFields[a]
	if !ok {
		return nil, jsonx.Errorf("decision.action", "unknown action %q (want one of %s)", *raw.Action, actionList())
	}
	present := map[string]bool{
		"program": raw.Program != nil, "args": raw.Args != nil, "path": raw.Path != nil,
		"old": raw.Old != nil, "new": raw.New != nil, "summary": raw.Summary != nil,
	}
	for _, f := range spec.required {
		if !present[f] {
			return nil, jsonx.Errorf("decision."+f, "required for action %s", a)
		}
		delete(present, f)
	}
	for _, f := range spec.optional {
		delete(present, f)
	}
	for _, f := range []string{"program", "args", "path", "old", "new", "summary"} {
		if present[f] {
			return nil, jsonx.Errorf("decision."+f, "not allowed for action %s", a)
		}
	}
	d := &Decision{Action: a}
	if raw.APIVersion != nil {
		d.APIVersion = *raw.APIVersion
	}
	if raw.Kind != nil {
		d.Kind = *raw.Kind
	}
	switch a {
	case ActionRunTool:
		d.Program = *raw.Program
		if d.Program == "" {
			return nil, jsonx.Errorf("decision.program", "must not be empty")
		}
		if raw.Args != nil {
			d.Args = *raw.Args
		}
	case ActionReadFile:
		d.Path = *raw.Path
	case ActionReplaceText:
		d.Path, d.Old = *raw.Path, *raw.Old
		n := *raw.New
		d.New = &n
	case ActionFinish:
		d.Summary = *raw.Summary
	}
	if raw.Reason != nil {
		d.Reason = *raw.Reason
	}
	return d, nil
}

func actionList() string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// String is a one-line human summary ("replace_text a.go", "run_tool go vet
// ./...") for progress lines; it is not a document.
func (d *Decision) String() string {
	switch d.Action {
	case ActionRunTool:
		return strings.TrimSpace(fmt.Sprintf("run_tool %s %s", d.Program, strings.Join(d.Args, " ")))
	case ActionReadFile, ActionReplaceText:
		return fmt.Sprintf("%s %s", d.Action, d.Path)
	}
	return string(d.Action)
}

// MarshalJSON writes exactly the fields of the decision's action, so a
// decision re-encoded from its decoded form decodes again to the same value
// (an empty summary or new text is kept, a stray field is never invented).
func (d Decision) MarshalJSON() ([]byte, error) {
	type out struct {
		APIVersion string   `json:"apiVersion,omitempty"`
		Kind       string   `json:"kind,omitempty"`
		Action     Action   `json:"action"`
		Program    *string  `json:"program,omitempty"`
		Args       []string `json:"args,omitempty"`
		Path       *string  `json:"path,omitempty"`
		Old        *string  `json:"old,omitempty"`
		New        *string  `json:"new,omitempty"`
		Summary    *string  `json:"summary,omitempty"`
		Reason     string   `json:"reason,omitempty"`
	}
	o := out{APIVersion: d.APIVersion, Kind: d.Kind, Action: d.Action, Reason: d.Reason}
	switch d.Action {
	case ActionRunTool:
		o.Program, o.Args = &d.Program, d.Args
	case ActionReadFile:
		o.Path = &d.Path
	case ActionReplaceText:
		o.Path, o.Old = &d.Path, &d.Old
		n := ""
		if d.New != nil {
			n = *d.New
		}
		o.New = &n
	case ActionFinish:
		o.Summary = &d.Summary
	}
	return jsonx.Marshal(o)
}

// DecisionSchema is the JSON Schema (2020-12) a model's reply must match:
// one object that is exactly one of the five actions. It is what the openai
// provider sends as response_format and agy as --json-schema; the loop
// still decodes every reply itself. schemas/decision.schema.json is the same
// schema plus the optional document header, locked to this one by a test.
const DecisionSchema = `{"type":"object","anyOf":[` +
	`{"type":"object","properties":{"action":{"const":"run_tool"},"program":{"type":"string","minLength":1},"args":{"type":"array","items":{"type":"string"}},"reason":{"type":"string"}},"required":["action","program"],"additionalProperties":false},` +
	`{"type":"object","properties":{"action":{"const":"read_file"},"path":{"type":"string"},"reason":{"type":"string"}},"required":["action","path"],"additionalProperties":false},` +
	`{"type":"object","properties":{"action":{"const":"replace_text"},"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"},"reason":{"type":"string"}},"required":["action","path","old","new"],"additionalProperties":false},` +
	`{"type":"object","properties":{"action":{"const":"verify"},"reason":{"type":"string"}},"required":["action"],"additionalProperties":false},` +
	`{"type":"object","properties":{"action":{"const":"finish"},"summary":{"type":"string"},"reason":{"type":"string"}},"required":["action","summary"],"additionalProperties":false}` +
	`]}`

// StrictDecisionSchema is the decision schema in the subset OpenAI's
// strict structured outputs accept (and gateways enforcing the same
// subset): the root is one object, not an anyOf; every property is listed
// in required; a property an action does not use is nullable and the
// model sends null for it; additionalProperties is false; there is no
// minLength or const. It says less than DecisionSchema (which fields go
// with which action), so DecodeDecision, which reads null as absent,
// still refuses a reply that mixes actions. It is also what llama.cpp and
// Ollama turn into a grammar: both accept type arrays and enum.
const StrictDecisionSchema = `{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["run_tool","read_file","replace_text","verify","finish"]},` +
	`"program":{"type":["string","null"],"description":"run_tool: the program, a bare name from the allowlist"},` +
	`"args":{"type":["array","null"],"items":{"type":"string"},"description":"run_tool: its arguments"},` +
	`"path":{"type":["string","null"],"description":"read_file, replace_text: a relative path"},` +
	`"old":{"type":["string","null"],"description":"replace_text: the exact text to replace, occurring once"},` +
	`"new":{"type":["string","null"],"description":"replace_text: the replacement"},` +
	`"summary":{"type":["string","null"],"description":"finish: what was done"},` +
	`"reason":{"type":["string","null"],"description":"why, optional"}` +
	`},"required":["action","program","args","path","old","new","summary","reason"],"additionalProperties":false}`
