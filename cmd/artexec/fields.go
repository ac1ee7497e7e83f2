package main

import "github.com/art-runtime/art/internal/cli"

// FieldFlags implements cli.FieldFlagger: the fields of execx.Narrowing
// (and the policy's IsolationBestEffort, the way out of an isolation this
// machine cannot enforce) that run's flags set.
func (*RunCmd) FieldFlags() cli.Flags {
	return cli.Flags{
		"Allow": "--allow", "Workspace": "--workspace",
		"Isolation": "--isolation", "IsolationBestEffort": "--isolation-best-effort",
		"Network": "--network", "AllowHost": "--allow-host",
	}
}
