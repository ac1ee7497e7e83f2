package execcli

import (
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/systest"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	systest.FieldFlags(t, &CLI{}, []systest.FieldCase{
		{Cmd: &RunCmd{}, Field: "Allow", Want: "--allow"},
		{Cmd: &RunCmd{}, Field: "Workspace", Want: "--workspace"},
		{Cmd: &RunCmd{}, Field: "Isolation", Want: "--isolation"},
		{Cmd: &RunCmd{}, Field: "IsolationBestEffort", Want: "--isolation-best-effort"},
		{Cmd: &RunCmd{}, Field: "Policy.Workspace", Want: "policy.workspace"},
		{Cmd: &RunCmd{}, Field: "Policy", Want: "policy"}, // "policy FILE: no such file" never named the flag
	})
}

// TestBadFlagValues: every flag of every command, given a bad value, is
// refused with exit 2 and an error naming the flag — not the document
// field it fills (task.dir, task.limits.timeout) — whichever layer
// refused it.
func TestBadFlagValues(t *testing.T) {
	systest.BadFlags(t, systest.FlagWalk{
		Grammar: &CLI{},
		Base:    map[string][]string{"run": {"--", "true"}, "check-policy": {"/nonexistent-policy.json"}},
		Strings: map[string]string{
			"run --cwd": "../..", "run --context": "/etc/passwd", "run --workspace": "/nonexistent-dir",
			"run --allow": "a/b", "run --env": "A=B", "run --set": "=x", "run --result": "/nonexistent-dir/r.json",
			"run --manifest": "/nonexistent.json", "run --policy": "/nonexistent.json",
		},
		// Documented codes: a path out of the workspace is refused (126), a
		// file that does not exist is not found (4).
		Codes: map[string]int{"run --cwd": 126, "run --context": 126, "run --policy": 4},
		Run:   systest.InProcess(t, "artexec", func() (any, []kong.Option) { return &CLI{}, nil }),
	})
}
