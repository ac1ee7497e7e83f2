package main

import (
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	if err := cli.CheckFieldFlags(&CLI{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd         cli.FieldFlagger
		field, want string
	}{
		{&RunCmd{}, "Env", "--env"},
		{&RunCmd{}, "IsolationBestEffort", "--isolation-best-effort"},
		{&McpCmd{}, "Env", "--env"},
		// artagent words its own config errors by the library's labels
		// ("allow: ...", "workspace nope: ...", "context-tokens: ...").
		{&RunCmd{}, "Allow", "allow"},
		{&RunCmd{}, "Workspace", "workspace"},
		{&RunCmd{}, "ContextTokens", "context-tokens"},
		{&McpCmd{}, "Workspace", "workspace"},
	}
	for _, tt := range tests {
		flags := tt.cmd.FieldFlags()
		if got := flags.Name(tt.field); got != tt.want {
			t.Errorf("%T: field %s is %q; want %q", tt.cmd, tt.field, got, tt.want)
		}
	}
}

// TestBudgetLineInFlags: the line printed when the provider ended a run on
// its context budget names run's flags, as it did when the provider named
// them itself.
func TestBudgetLineInFlags(t *testing.T) {
	p, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1", Model: "m", ContextTokens: 2048, MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Body(&provider.Request{Task: strings.Repeat("a long task ", 2000)})
	if err == nil {
		t.Fatal("Body of an oversized task = nil error")
	}
	msg := cli.Message(err, budgetFields)
	if !strings.Contains(msg, "are left of --context-tokens 2048 once --max-tokens 1024 and the schema are reserved; raise --context-tokens or shorten the task") {
		t.Errorf("budget line = %q", msg)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the provider's own wording names a flag: %q", err)
	}
}
