package main

import (
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	systest.FieldFlags(t, &CLI{}, []systest.FieldCase{
		{Cmd: &RunCmd{}, Field: "Env", Want: "--env"},
		{Cmd: &RunCmd{}, Field: "IsolationBestEffort", Want: "--isolation-best-effort"},
		{Cmd: &McpCmd{}, Field: "Env", Want: "--env"},
		// artagent words its own config errors by the library's labels
		// ("allow: ...", "workspace nope: ...", "context-tokens: ...").
		{Cmd: &RunCmd{}, Field: "Allow", Want: "allow"},
		{Cmd: &RunCmd{}, Field: "Workspace", Want: "workspace"},
		{Cmd: &RunCmd{}, Field: "ContextTokens", Want: "context-tokens"},
		{Cmd: &McpCmd{}, Field: "Workspace", Want: "workspace"},
	})
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
