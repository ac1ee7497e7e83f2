package main

import (
	"github.com/alecthomas/kong"
	"github.com/art-runtime/art/lib/goal"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	systest.FieldFlags(t, &CLI{}, []systest.FieldCase{
		{Cmd: &CheckCmd{}, Field: "Rev", Want: "--rev"},
		{Cmd: &CheckCmd{}, Field: "Queue", Want: "--queue"},
		{Cmd: &CheckCmd{}, Field: "Dir", Want: "--queue-dir"},
		{Cmd: &PutCmd{}, Field: "Rev", Want: "--rev"},
		{Cmd: &PutCmd{}, Field: "Dir", Want: "--queue-dir"},
		{Cmd: &ReceiptCmd{}, Field: "Rev", Want: "--rev"},
		{Cmd: &ReceiptCmd{}, Field: "Queue", Want: "--queue"},
		{Cmd: &CloseCmd{}, Field: "Rev", Want: "--rev"},
		{Cmd: &CloseCmd{}, Field: "Queue", Want: "queue"},
	}, kong.Vars{"idrule": goal.IDRule})
}
