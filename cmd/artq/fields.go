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
		"OutputDir": "--output-dir", "Lease": "--lease", "Metrics": "--metrics",
	}
)

// FieldFlags implements cli.FieldFlagger for every command.
func (*CLI) FieldFlags() cli.Flags { return queueFields }

// FieldFlags implements cli.FieldFlagger; without --policy the flags are
// the policy, so its document fields name them too.
func (c *WorkCmd) FieldFlags() cli.Flags {
	f := workFields.With(nil)
	if c.Policy == "" {
		f.Given("policy.allow", "--allow", len(c.Allow) > 0, "")
		f.Given("policy.workspace", "--workspace", c.Workspace != "", c.Workspace)
	}
	return f
}

// FieldFlags implements cli.FieldFlagger: queue.EnqueueRequest.ID and
// queue.IdempotentIDs's key.
// The task flags name the manifest fields they set, when given.
func (c *EnqueueCmd) FieldFlags() cli.Flags {
	f := cli.Flags{"ID": "--id", "IdempotencyKey": "--idempotency-key"}
	f.Given("task.limits.timeout", "--timeout", c.Timeout != 0, c.Timeout)
	f.Given("task.limits.output_bytes", "--output-bytes", c.OutputBytes != 0, c.OutputBytes)
	f.Given("task.env.set", "--env", len(c.Env) > 0, "")
	return f
}

// FieldFlags implements cli.FieldFlagger: where a reader starts
// (queue.GapError's hint).
func (*LogCmd) FieldFlags() cli.Flags { return cli.Flags{"After": "--after"} }

// warnIn words the warnings warn prints in flags: the worker's warnings
// name its Config's fields (an --output-dir that cannot be written).
func warnIn(warn func(error), flags cli.Flags) func(error) {
	return func(err error) { warn(errors.New(cli.Message(err, flags))) }
}
