package main

import (
	"testing"

	"github.com/art-runtime/art/internal/cli"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	if err := cli.CheckFieldFlags(&CLI{}, options(&CLI{})...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd         cli.FieldFlagger
		field, want string
	}{
		{&WorkCmd{}, "Policy", "--policy"},
		{&WorkCmd{}, "Allow", "--allow"},
		{&WorkCmd{}, "Workspace", "--workspace"},
		{&WorkCmd{}, "Isolation", "--isolation"},
		{&WorkCmd{}, "IsolationBestEffort", "--isolation-best-effort"},
		{&WorkCmd{}, "OutputDir", "--output-dir"},
		{&WorkCmd{}, "Queue", "--queue"},
		{&WorkCmd{}, "Dir", "--dir"},
		{&WorkCmd{}, "Backend", "--backend"},
		{&EnqueueCmd{}, "ID", "--id"},
		{&EnqueueCmd{}, "IdempotencyKey", "--idempotency-key"},
		{&EnqueueCmd{}, "max_attempts", "max_attempts"},
		{&EnqueueCmd{}, "Env", "env"}, // enqueue has no --env: words.Command's way out keeps its label
		{&LogCmd{}, "After", "--after"},
		{&CLI{}, "Queue", "--queue"}, // every command, status included
		{&CLI{}, "Workspace", "workspace"},
	}
	for _, tt := range tests {
		flags := tt.cmd.FieldFlags()
		if _, ok := tt.cmd.(*CLI); !ok {
			flags = (&CLI{}).FieldFlags().With(flags)
		}
		if got := flags.Name(tt.field); got != tt.want {
			t.Errorf("%T: field %s is %q; want %q", tt.cmd, tt.field, got, tt.want)
		}
	}
}
