package main

import (
	"testing"

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
