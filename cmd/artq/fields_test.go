package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// TestFieldFlags: every flag a command's table names is one of its flags,
// and each command words the library fields it sets as its flags (and
// keeps the library's label for a field its messages never named by flag).
func TestFieldFlags(t *testing.T) {
	if err := cli.CheckFieldFlags(&CLI{}, options(&CLI{})...); err != nil {
		t.Fatal(err)
	}
	tests := []systest.FieldCase{
		{Cmd: &WorkCmd{}, Field: "Policy", Want: "--policy"},
		{Cmd: &WorkCmd{}, Field: "Allow", Want: "--allow"},
		{Cmd: &WorkCmd{}, Field: "Workspace", Want: "--workspace"},
		{Cmd: &WorkCmd{}, Field: "Isolation", Want: "--isolation"},
		{Cmd: &WorkCmd{}, Field: "IsolationBestEffort", Want: "--isolation-best-effort"},
		{Cmd: &WorkCmd{}, Field: "OutputDir", Want: "--output-dir"},
		{Cmd: &WorkCmd{}, Field: "Queue", Want: "--queue"},
		{Cmd: &WorkCmd{}, Field: "Dir", Want: "--dir"},
		{Cmd: &WorkCmd{}, Field: "Backend", Want: "--backend"},
		{Cmd: &EnqueueCmd{}, Field: "ID", Want: "--id"},
		{Cmd: &EnqueueCmd{}, Field: "IdempotencyKey", Want: "--idempotency-key"},
		{Cmd: &EnqueueCmd{}, Field: "max_attempts", Want: "max_attempts"},
		{Cmd: &EnqueueCmd{}, Field: "Env", Want: "env"}, // enqueue has no --env: words.Command's way out keeps its label
		{Cmd: &LogCmd{}, Field: "After", Want: "--after"},
		{Cmd: &CLI{}, Field: "Queue", Want: "--queue"}, // every command, status included
		{Cmd: &CLI{}, Field: "Workspace", Want: "workspace"},
	}
	for _, tt := range tests {
		flags := tt.Cmd.FieldFlags()
		if _, ok := tt.Cmd.(*CLI); !ok {
			flags = (&CLI{}).FieldFlags().With(flags)
		}
		if got := flags.Name(tt.Field); got != tt.Want {
			t.Errorf("%T: field %s is %q; want %q", tt.Cmd, tt.Field, got, tt.Want)
		}
	}
}

// TestLibraryErrorsInFlags: the queue's and the worker's errors and hints
// that name fields read as artq's flags, exactly as artq printed them
// before the libraries named fields.
func TestLibraryErrorsInFlags(t *testing.T) {
	gap := cli.Hint(fmt.Errorf("log: %w", &queue.GapError{From: 3, To: 9}), (&LogCmd{}).FieldFlags())
	if want := "their results are in 'artq status'; run 'artq log' again (without --after) to read what the log holds now"; gap != want {
		t.Errorf("log's gap hint = %q; want %q", gap, want)
	}
	var got []string
	warn := warnIn(func(err error) { got = append(got, err.Error()) }, (&WorkCmd{}).FieldFlags())
	warn(fmt.Errorf("task t1 attempt 1: %w (the result is recorded without it)",
		exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", errors.New("no space left on device"))))
	if want := "task t1 attempt 1: --output-dir: no space left on device (the result is recorded without it)"; len(got) != 1 || got[0] != want {
		t.Errorf("work's warning = %q; want %q", got, want)
	}
	_, err := worker.Policy("", execx.Narrowing{})
	if msg := cli.Message(err, (&WorkCmd{}).FieldFlags()); msg != "work needs --policy FILE or at least one --allow NAME: say which programs may run" ||
		!errors.Is(err, worker.ErrNoPolicy) || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("worker.Policy without a policy = %q (exit %d)", msg, exitcode.Of(err))
	}
	err = queue.IdempotentIDs("", nil)
	if msg := cli.Message(err, (&EnqueueCmd{}).FieldFlags()); msg != "--idempotency-key: want 1 to 1024 bytes, got 0" || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("IdempotentIDs(\"\") = %q (exit %d)", msg, exitcode.Of(err))
	}
}

// TestBadFlagValues: every flag of every command, given a bad value, is
// refused with exit 2 and an error naming the flag (systest.BadFlags).
func TestBadFlagValues(t *testing.T) {
	systest.BadFlags(t, systest.FlagWalk{
		Grammar: &CLI{}, Options: options(&CLI{}),
		Base: map[string][]string{
			"enqueue": {"--", "true"}, "cancel": {"nope"}, "retry": {"nope"}, "status": {},
			"work": {"--drain", "--allow", "true"},
		},
		Strings: map[string]string{
			"--queue": "a/b", "--backend": "ftp://x", "enqueue --id": "a b", "enqueue --env": "NOVALUE",
			"enqueue --idempotency-key": "", "work --workspace": "/nonexistent-dir", "work --allow": "a/b",
			"work --policy": "/nonexistent.json", "enqueue --manifest": "/nonexistent.json",
			"enqueue --workspace-source": "../..", "enqueue --acceptance": "'unclosed",
		},
		Codes: map[string]int{"work --policy": 4},
		Skip: map[string]string{
			"queues --queue":   "queues lists every queue: it does not read --queue",
			"queues --backend": "not checked by queues: an unknown backend lists nothing (a gap)",
		},
		Run: systest.InProcess(t, "artq", func() (any, []kong.Option) { c := &CLI{}; return c, options(c) }),
	})
}
