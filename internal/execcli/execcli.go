// Package execcli is artexec's whole command line: the kong grammar of
// run, check-policy, isolation and completion, help, events and the
// errors' flag names. The artexec-cli binary is this package; the artexec
// binary runs the plain forms of run itself (package runcmd, without kong)
// and hands every other invocation to artexec-cli (docs/artexec.md, "Two
// binaries"). All behaviour lives in lib/execx.
package execcli

import (
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/execcli/runcmd"
)

// CLI is artexec's grammar (docs/artexec.md).
type CLI struct {
	cli.Globals

	Run         RunCmd            `cmd:"" help:"Run one program under a policy and print its Result."`
	CheckPolicy CheckPolicyCmd    `cmd:"" name:"check-policy" help:"Validate a Policy document and print it with defaults applied."`
	Isolation   IsolationCmd      `cmd:"" help:"Print what this kernel can enforce (JSON)."`
	Completion  cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

// Main runs artexec with the process's arguments and returns its exit
// code: run's plain forms as the artexec binary runs them, everything
// else through kong.
func Main() int {
	if code, ok := runcmd.Fast(os.Args[1:]); ok {
		return code
	}
	return cli.Main("artexec", "Run a program under a policy: allowlist, workspace confinement, timeout, bounded output, isolation.", &CLI{})
}
