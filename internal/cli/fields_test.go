package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

// fieldCmd fails with a library error naming fields; its table words
// "Workspace" and "Queue" (the tool's) as its flags.
type fieldCmd struct {
	Workspace string `name:"workspace" help:"A workspace."`
	Kind      string `name:"kind" help:"Which library error to return."`
}

func (c *fieldCmd) Run() error {
	switch c.Kind {
	case "field":
		return fmt.Errorf("task t1: %w", exitcode.Field(exitcode.Refused, "Workspace", "/x", "outside the policy workspace %s", "/p"))
	case "unmapped":
		return exitcode.Field(exitcode.Usage, "MaxSteps", "", "must be at least 1, got 0")
	case "two":
		return fmt.Errorf("%w; %w", exitcode.Field(exitcode.Usage, "Workspace", "", "required"),
			exitcode.Field(exitcode.Usage, "Dir", "", "name it with %s", exitcode.Ref("Queue")))
	case "hint":
		return exitcode.WithHint(exitcode.Errorf(exitcode.NotFound, "no queue"), "choose one with %s NAME", exitcode.Ref("Queue"))
	case "plainhint":
		return exitcode.WithHint(exitcode.Errorf(exitcode.NotFound, "no queue"), "%s", "see 'artq queues'")
	}
	return nil
}

// FieldFlags implements FieldFlagger.
func (*fieldCmd) FieldFlags() Flags { return Flags{"Workspace": "--workspace"} }

// otherCmd has no table of its own: only the tool's applies.
type otherCmd struct {
	Workspace string `name:"workspace" help:"A workspace."`
}

func (*otherCmd) Run() error {
	return exitcode.Field(exitcode.Usage, "Workspace", "/y", "not a directory")
}

type fieldCLI struct {
	Queue string   `name:"queue" help:"A queue."`
	Field fieldCmd `cmd:"" help:"Fail naming fields."`
	Other otherCmd `cmd:"" help:"Fail naming a field it does not map."`
}

// FieldFlags implements FieldFlagger for every command.
func (*fieldCLI) FieldFlags() Flags { return Flags{"Queue": "--queue"} }

// TestRunWordsFieldsAsFlags: the CLI prints a library's FieldError and
// hint with the command's flags for the fields its table maps, the
// library's labels for the rest, and the error's exit code.
func TestRunWordsFieldsAsFlags(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"field", "--kind", "field"}, exitcode.Refused,
			"artf: error: task t1: --workspace /x: outside the policy workspace /p\n"},
		{[]string{"field", "--kind", "unmapped"}, exitcode.Usage,
			"artf: error: max-steps: must be at least 1, got 0\n"},
		{[]string{"field", "--kind", "two"}, exitcode.Usage,
			"artf: error: --workspace: required; dir: name it with --queue\n"},
		{[]string{"field", "--kind", "hint"}, exitcode.NotFound,
			"artf: error: no queue\nartf: hint: choose one with --queue NAME\n"},
		{[]string{"field", "--kind", "plainhint"}, exitcode.NotFound,
			"artf: error: no queue\nartf: hint: see 'artq queues'\n"},
		// Another command of the same tool: its table is only the tool's.
		{[]string{"other"}, exitcode.Usage, "artf: error: workspace /y: not a directory\n"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := Run(context.Background(), "artf", "A test tool.", &fieldCLI{}, tt.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != tt.code || errb.String() != tt.want {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
}

func TestFlagsName(t *testing.T) {
	f := Flags{"Workspace": "--workspace"}.With(Flags{"Dir": "--queue-dir"})
	tests := []struct{ field, want string }{
		{"Workspace", "--workspace"},
		{"Dir", "--queue-dir"},
		{"IdempotencyKey", "idempotency-key"}, // not a flag here: the library's label
	}
	for _, tt := range tests {
		if got := f.Name(tt.field); got != tt.want {
			t.Errorf("Name(%q) = %q; want %q", tt.field, got, tt.want)
		}
	}
	var none Flags
	if got := Message(exitcode.Field(exitcode.Usage, "Workspace", "", "required"), none); got != "workspace: required" {
		t.Errorf("Message without a table = %q", got)
	}
}

type badTableCmd struct {
	Workspace string `name:"workspace" help:"A workspace."`
}

func (*badTableCmd) Run() error { return nil }

// FieldFlags names a flag the command does not have.
func (*badTableCmd) FieldFlags() Flags { return Flags{"Workspace": "--workspace", "Dir": "--dir"} }

type badCLI struct {
	Bad badTableCmd `cmd:"" help:"A command whose table is wrong."`
}

func TestCheckFieldFlags(t *testing.T) {
	if err := CheckFieldFlags(&fieldCLI{}); err != nil {
		t.Errorf("CheckFieldFlags(good) = %v", err)
	}
	err := CheckFieldFlags(&badCLI{})
	if err == nil || !strings.Contains(err.Error(), "field Dir maps to --dir, which is not one of its flags") {
		t.Errorf("CheckFieldFlags(bad) = %v; want the missing --dir named", err)
	}
}
