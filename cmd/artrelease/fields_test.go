package main

import (
	"testing"

	"github.com/art-runtime/art/internal/cli"
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
		{&BuildCmd{}, "Ref", "--ref"},
		{&BuildCmd{}, "Out", "--out"},
		{&BuildCmd{}, "Force", "--force"},
		{&BuildCmd{}, "ContractFile", "--contract"},
		{&CheckCmd{}, "ContractFile", "--contract"},
		{&VerifyCmd{}, "ContractFile", "--contract"},
		{&VerifyTagCmd{}, "ContractFile", "--contract"},
		{&VerifyTagCmd{}, "Main", "--main"},
		{&VerifyCmd{}, "Main", "main"},
	}
	for _, tt := range tests {
		flags := tt.cmd.FieldFlags()
		if got := flags.Name(tt.field); got != tt.want {
			t.Errorf("%T: field %s is %q; want %q", tt.cmd, tt.field, got, tt.want)
		}
	}
}
