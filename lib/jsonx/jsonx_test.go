package jsonx

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

type limits struct {
	Timeout     Duration `json:"timeout,omitempty"`
	OutputBytes int64    `json:"output_bytes,omitempty"`
}

type doc struct {
	TypeMeta
	Program string            `json:"program"`
	Args    []string          `json:"args,omitempty"`
	Limits  *limits           `json:"limits,omitempty"`
	Set     map[string]string `json:"set,omitempty"`
	Attrs   map[string]any    `json:"attrs,omitempty"`
	At      time.Time         `json:"at,omitzero"`
}

func (*doc) DocumentKind() string { return "Task" }

func (d *doc) Default() {
	if d.Limits == nil {
		d.Limits = &limits{}
	}
	if d.Limits.Timeout == 0 {
		d.Limits.Timeout = Duration(time.Minute)
	}
}

func (d *doc) Validate() error {
	if d.Program == "" {
		return Errorf("task.program", "required")
	}
	return nil
}

func TestDecode(t *testing.T) {
	const head = `"apiVersion":"art/v1alpha1","kind":"Task",`
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means success
	}{
		{"minimal", `{` + head + `"program":"go"}`, ""},
		{"unknown nested field", `{` + head + `"program":"go","limits":{"timout":"1s"}}`, "task.limits.timout: unknown field"},
		{"case-insensitive match refused", `{` + head + `"Program":"go"}`, "task.Program: unknown field"},
		{"duplicate key", `{` + head + `"program":"go","program":"rm"}`, "task.program: duplicate key"},
		{"bad duration", `{` + head + `"program":"go","limits":{"timeout":"soon"}}`, `task.limits.timeout: invalid duration "soon"`},
		{"negative duration", `{` + head + `"program":"go","limits":{"timeout":"-1s"}}`, `task.limits.timeout: negative duration`},
		{"wrong type", `{` + head + `"program":"go","args":"x"}`, "task.args: expected array, got string"},
		{"wrong elem type", `{` + head + `"program":"go","args":["a",3]}`, "task.args[1]: expected string, got number 3"},
		{"int overflow", `{` + head + `"program":"go","limits":{"output_bytes":1e99}}`, "task.limits.output_bytes: 1e99 is not an integer"},
		{"trailing data", `{` + head + `"program":"go"} {}`, "task: trailing data"},
		{"missing apiVersion", `{"kind":"Task","program":"go"}`, "task.apiVersion: required"},
		{"wrong kind", `{"apiVersion":"art/v1alpha1","kind":"Policy","program":"go"}`, `task.kind: got "Policy", want "Task"`},
		{"wrong version", `{"apiVersion":"art/v2","kind":"Task","program":"go"}`, `task.apiVersion: unsupported "art/v2"`},
		{"semantic", `{` + head + `"program":""}`, "task.program: required"},
		{"syntax", `{` + head + `"program":`, "task"},
		{"duplicate inside any", `{` + head + `"program":"go","attrs":{"a":{"b":1,"b":2}}}`, "task.attrs.a.b: duplicate key"},
		{"not an object", `[]`, "task: expected object, got array"},
		{"other kind named before its fields", `{"apiVersion":"art/v1alpha1","kind":"Goal","title":"x"}`, `task.kind: got "Goal", want "Task"`},
		{"bad time", `{` + head + `"program":"go","at":"yesterday"}`, `task.at: invalid time "yesterday" (want RFC 3339`},
	}
	for _, tt := range tests {
		var d doc
		err := Decode([]byte(tt.in), "task", &d)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: Decode = %v; want success", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: Decode = %v; want error containing %q", tt.name, err, tt.wantErr)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: exit code %d; want 2", tt.name, exitcode.Of(err))
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %T is not a FieldError", tt.name, err)
		}
		if strings.Contains(err.Error(), "jsonx.") || strings.Contains(err.Error(), "time.Duration") {
			t.Errorf("%s: error %q leaks a Go type name", tt.name, err)
		}
	}
}

func TestDecodeDefaultsAndNumbers(t *testing.T) {
	var d doc
	in := `{"apiVersion":"art/v1alpha1","kind":"Task","program":"go","attrs":{"big":9007199254740993}}`
	if err := Decode([]byte(in), "task", &d); err != nil {
		t.Fatal(err)
	}
	if d.Limits.Timeout.D() != time.Minute {
		t.Errorf("default timeout = %v; want 1m", d.Limits.Timeout.D())
	}
	if got := d.Attrs["big"]; got == nil || got.(interface{ String() string }).String() != "9007199254740993" {
		t.Errorf("large integer in attrs = %v; want it kept exactly", got)
	}
}

func TestMarshalDeterministic(t *testing.T) {
	v := map[string]any{"b": "<x>", "a": 1}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"a":1,"b":"<x>"}` {
		t.Errorf("Marshal = %s; want sorted keys, no HTML escaping, no newline", b)
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"go","limits":{"timeout":"1s"}}`)
	f.Add(`{"program":"go","program":"x"}`)
	f.Add(`{"attrs":{"a":[1,{"b":null}]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var d doc
		err := Decode([]byte(in), "task", &d)
		if err != nil && exitcode.Of(err) != exitcode.Usage {
			t.Fatalf("Decode(%q) error %v has exit code %d; want 2", in, err, exitcode.Of(err))
		}
	})
}
