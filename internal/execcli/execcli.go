// Package execcli is artexec's whole command line: the kong grammar of
// run, check-policy, isolation and completion, help, events and the
// errors' flag names. The artexec-cli binary is this package; the artexec
// binary runs the plain forms of run itself (package runcmd, without kong)
// and hands every other invocation to artexec-cli (docs/artexec.md, "Two
// binaries"). All behaviour lives in lib/execx.
package execcli

import "github.com/art-runtime/art/internal/cli"

// CLI is artexec's grammar (docs/artexec.md).
type CLI struct {
	cli.Globals

	Run         RunCmd            `cmd:"" help:"Run one program under a policy and print its Result."`
	CheckPolicy CheckPolicyCmd    `cmd:"" name:"check-policy" help:"Validate a Policy document and print it with defaults applied."`
	Isolation   IsolationCmd      `cmd:"" help:"Print what this kernel can enforce (JSON)."`
	Completion  cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

// Main runs artexec with the process's arguments through kong and returns
// its exit code. The artexec binary has tried run's plain forms itself
// (runcmd.Fast) before it hands an invocation here, so Main does not try
// them again.
func Main() int {
	return cli.Main("artexec", "Run a program under a policy: allowlist, workspace confinement, timeout, bounded output, isolation.", &CLI{})
}
