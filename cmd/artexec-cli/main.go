// Command artexec-cli is artexec's whole command line (package execcli):
// the artexec binary runs the plain forms of `artexec run` itself and
// hands every other invocation here. Run it as artexec; its help, errors
// and exit codes are artexec's (docs/artexec.md, "Two binaries").
package main

import (
	"os"

	"github.com/art-runtime/art/internal/execcli"
	_ "github.com/art-runtime/art/internal/oneproc" // one P: a one-shot process, mostly blocked
	"github.com/art-runtime/art/lib/execx"
)

func main() {
	// The supervisor too: a runner without a trusted artexec-shim beside
	// it starts itself as one.
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	os.Exit(execcli.Main())
}
