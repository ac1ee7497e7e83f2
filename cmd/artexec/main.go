// Command artexec runs one program under bounds: a program allowlist, a
// workspace it cannot leave, a fresh environment, a timeout that kills the
// whole process tree, bounded output capture, rlimits and Landlock or
// namespace isolation. It prints the run's Result as JSON and exits with
// the program's own code (124 timed out, 130 cancelled, 126 refused, 127
// not found). All behaviour lives in lib/execx.
//
// This binary is the hot path only: run's plain forms (package runcmd),
// and the supervisor when it is started as one. It links no command-line
// framework, so a task's start pays for none; every other invocation
// (help, the other commands, -o, --events, errors, network allow) is
// handed whole to the artexec-cli binary installed beside it (docs/artexec.md, "Two
// binaries").
package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/internal/execcli/runcmd"
	_ "github.com/art-runtime/art/internal/oneproc" // one P: a one-shot process, mostly blocked
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

// cliName is the binary that holds artexec's whole command line.
const cliName = "artexec-cli"

func main() {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	os.Exit(run(handOff))
}

// run runs a plain `artexec run` itself and gives every other invocation
// to rest: handOff here, the whole command line in-process in the tests.
func run(rest func() int) int {
	if code, ok := runcmd.Fast(os.Args[1:]); ok {
		return code
	}
	return rest()
}

// handOff executes artexec-cli with this process's arguments, environment
// and descriptors; it returns only when that fails.
func handOff() int {
	path, err := clibase.Companion(cliName)
	if err == nil {
		err = syscall.Exec(path, os.Args, os.Environ())
		err = fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "artexec: error: %v\n", err)
	fmt.Fprintf(os.Stderr, "artexec: hint: artexec's commands other than a plain run, and runs with network allow, are in %s, installed beside artexec (make install)\n", cliName)
	return exitcode.Internal
}
