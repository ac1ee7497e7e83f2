package exitcode

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestLabel(t *testing.T) {
	tests := []struct{ field, want string }{
		{"Workspace", "workspace"},
		{"IdempotencyKey", "idempotency-key"},
		{"IsolationBestEffort", "isolation-best-effort"},
		{"Policy.Workspace", "policy.workspace"},
		{"ID", "id"},
		{"BaseURL", "base-url"},
		{"HTTPProxy", "http-proxy"},
		{"MaxTokens", "max-tokens"},
		{"run.source", "run.source"},
		{"max_attempts", "max_attempts"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Label(tt.field); got != tt.want {
			t.Errorf("Label(%q) = %q; want %q", tt.field, got, tt.want)
		}
	}
}

var errWidens = Sentinel(Refused, "would widen")

func TestFieldErrorWording(t *testing.T) {
	flags := func(f string) string {
		return map[string]string{"Workspace": "--workspace", "Queue": "--queue", "ID": "--id"}[f]
	}
	tests := []struct {
		name     string
		err      *FieldError
		lib, cli string
		code     int
	}{
		{"field and value", Field(Refused, "Workspace", "/x", "outside the policy workspace %s", "/p"),
			"workspace /x: outside the policy workspace /p", "--workspace /x: outside the policy workspace /p", Refused},
		{"no value", Field(Usage, "Workspace", "", "required"), "workspace: required", "--workspace: required", Usage},
		{"no reason", Field(Usage, "Workspace", "/x", ""), "workspace /x", "--workspace /x", Usage},
		{"another field in the reason", Field(Usage, "Dir", "", "a NATS queue has no directory; name it with %s", Ref("Queue")),
			"dir: a NATS queue has no directory; name it with queue", "dir: a NATS queue has no directory; name it with --queue", Usage},
		{"whole text", Fieldf(Usage, "ID", "a", "%s %s and the manifest's id %s differ", Ref("ID"), "a", "b"),
			"id a and the manifest's id b differ", "--id a and the manifest's id b differ", Usage},
		{"a value is never a format", Field(Usage, "Workspace", "%s%d", "bad %s", "%v"),
			"workspace %s%d: bad %v", "--workspace %s%d: bad %v", Usage},
	}
	for _, tt := range tests {
		name := func(f string) string {
			if fl := flags(f); fl != "" {
				return fl
			}
			return Label(f)
		}
		if got := tt.err.Error(); got != tt.lib {
			t.Errorf("%s: Error() = %q; want %q", tt.name, got, tt.lib)
		}
		if got := tt.err.Render(name); got != tt.cli {
			t.Errorf("%s: Render(flags) = %q; want %q", tt.name, got, tt.cli)
		}
		if got := Of(fmt.Errorf("outer: %w", tt.err)); got != tt.code {
			t.Errorf("%s: Of = %d; want %d", tt.name, got, tt.code)
		}
		if strings.Contains(tt.lib, "--") {
			t.Errorf("%s: the library's wording %q names a flag", tt.name, tt.lib)
		}
	}
}

func TestFieldErrorIsAs(t *testing.T) {
	cause := &fs.PathError{Op: "stat", Path: "/x", Err: fs.ErrNotExist}
	err := fmt.Errorf("task t1: %w", Field(Usage, "Workspace", "/x", "%w", cause).Because(errWidens))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Workspace" || fe.Value != "/x" || fe.Code != Usage {
		t.Fatalf("errors.As(%v) = %+v", err, fe)
	}
	if AsField(err) != fe || AsField(errors.New("x")) != nil {
		t.Errorf("AsField disagrees with errors.As")
	}
	if !errors.Is(err, errWidens) {
		t.Errorf("errors.Is(err, the sentinel given to Because) = false")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, a cause given with %%w) = false")
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe != cause {
		t.Errorf("errors.As(err, *fs.PathError) did not reach the cause")
	}
	if strings.Contains(err.Error(), "would widen") {
		t.Errorf("Because put the sentinel in the text: %q", err)
	}
	if got := Field(Usage, "Dir", "", "%s or %s", Ref("Queue"), Ref("Dir")).Fields(); strings.Join(got, ",") != "Dir,Queue" {
		t.Errorf("Fields() = %v; want [Dir Queue]", got)
	}
}

func TestWithHint(t *testing.T) {
	if WithHint(nil, "x") != nil {
		t.Errorf("WithHint(nil) != nil")
	}
	base := Errorf(NotFound, "task t: no queue at /q: %w", errWidens)
	err := fmt.Errorf("wrapped: %w", WithHint(base, "choose it with %s NAME or %s DIR (%s)", Ref("Queue"), Ref("Dir"), "50%"))
	var h *Hinted
	if !errors.As(err, &h) {
		t.Fatal("errors.As(*Hinted) = false")
	}
	if got, want := h.Hint(), "choose it with queue NAME or dir DIR (50%)"; got != want {
		t.Errorf("Hint() = %q; want %q", got, want)
	}
	flag := func(f string) string { return "--" + Label(f) }
	if got, want := h.RenderHint(flag), "choose it with --queue NAME or --dir DIR (50%)"; got != want {
		t.Errorf("RenderHint = %q; want %q", got, want)
	}
	if err.Error() != "wrapped: "+base.Error() || Of(err) != NotFound || !errors.Is(err, errWidens) {
		t.Errorf("the hint changed the error: %q, code %d", err, Of(err))
	}
	if got := h.HintFields(); strings.Join(got, ",") != "Queue,Dir" {
		t.Errorf("HintFields() = %v", got)
	}
}

func TestWalk(t *testing.T) {
	a, b := Field(Usage, "A", "", "x"), Field(Usage, "B", "", "y")
	err := fmt.Errorf("%w; %w", a, fmt.Errorf("in: %w", b))
	var got []string
	Walk(err, func(e error) {
		if fe, ok := e.(*FieldError); ok {
			got = append(got, fe.Field)
		}
	})
	if strings.Join(got, ",") != "A,B" {
		t.Errorf("Walk found %v; want [A B]", got)
	}
	Walk(nil, func(error) { t.Error("Walk(nil) called fn") })
}
