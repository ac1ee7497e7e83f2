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
		{Cmd: &BuildCmd{}, Field: "Ref", Want: "--ref"},
		{Cmd: &BuildCmd{}, Field: "Out", Want: "--out"},
		{Cmd: &BuildCmd{}, Field: "Force", Want: "--force"},
		{Cmd: &BuildCmd{}, Field: "ContractFile", Want: "--contract"},
		{Cmd: &CheckCmd{}, Field: "ContractFile", Want: "--contract"},
		{Cmd: &VerifyCmd{}, Field: "ContractFile", Want: "--contract"},
		{Cmd: &VerifyTagCmd{}, Field: "ContractFile", Want: "--contract"},
		{Cmd: &VerifyTagCmd{}, Field: "Main", Want: "--main"},
		{Cmd: &VerifyCmd{}, Field: "Main", Want: "main"},
	})
}
