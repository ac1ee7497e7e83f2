package main

import (
	"errors"

	"github.com/art-runtime/art/internal/cli"
)

// The library fields artq's flags set, for wording the libraries' errors
// and hints in flags (cli.Flags).
var (
	// queueFields: backends.Config, filled by the flags every command has.
	queueFields = cli.Flags{"Backend": "--backend", "Queue": "--queue", "Dir": "--dir", "LockTimeout": "--lock-timeout"}
	// workFields: the worker's policy (worker.Policy, execx.Narrowing) and
	// its Config.
	workFields = cli.Flags{
		"Policy": "--policy", "Allow": "--allow", "Workspace": "--workspace",
		"Isolation": "--isolation", "IsolationBestEffort": "--isolation-best-effort",
		"Network": "--network", "AllowHost": "--allow-host",
		"OutputDir": "--output-dir", "Lease": "--lease",
	}
)

// FieldFlags implements cli.FieldFlagger for every command.
func (*CLI) FieldFlags() cli.Flags { return queueFields }

// FieldFlags implements cli.FieldFlagger.
func (*WorkCmd) FieldFlags() cli.Flags { return workFields }

// FieldFlags implements cli.FieldFlagger: queue.EnqueueRequest.ID and
// queue.IdempotentIDs's key.
func (*EnqueueCmd) FieldFlags() cli.Flags {
	return cli.Flags{"ID": "--id", "IdempotencyKey": "--idempotency-key"}
}

// FieldFlags implements cli.FieldFlagger: where a reader starts
// (queue.GapError's hint).
func (*LogCmd) FieldFlags() cli.Flags { return cli.Flags{"After": "--after"} }

// warnIn words the warnings warn prints in flags: the worker's warnings
// name its Config's fields (an --output-dir that cannot be written).
func warnIn(warn func(error), flags cli.Flags) func(error) {
	return func(err error) { warn(errors.New(cli.Message(err, flags))) }
}
