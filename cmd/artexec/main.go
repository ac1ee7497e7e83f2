// Command artexec runs one program under bounds: a program allowlist, a
// workspace it cannot leave, a fresh environment, a timeout that kills the
// whole process tree, bounded output capture, rlimits and Landlock or
// namespace isolation. It prints the run's Result as JSON and exits with
// the program's own code (124 timed out, 130 cancelled, 126 refused, 127
// not found). All behaviour lives in lib/execx; this is its CLI.
package main

import (
	"os"

	"github.com/art-runtime/art/internal/cli"
	_ "github.com/art-runtime/art/internal/oneproc" // one P: a one-shot process, mostly blocked
	"github.com/art-runtime/art/lib/execx"
)

// CLI is artexec's grammar (docs/artexec.md).
type CLI struct {
	cli.Globals

	Run         RunCmd            `cmd:"" help:"Run one program under a policy and print its Result."`
	CheckPolicy CheckPolicyCmd    `cmd:"" name:"check-policy" help:"Validate a Policy document and print it with defaults applied."`
	Isolation   IsolationCmd      `cmd:"" help:"Print what this kernel can enforce (JSON)."`
	Completion  cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	os.Exit(run())
}

func run() int {
	if code, ok := fastRun(os.Args[1:]); ok {
		return code
	}
	return cli.Main("artexec", "Run a program under a policy: allowlist, workspace confinement, timeout, bounded output, isolation.", &CLI{})
}
