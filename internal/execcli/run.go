package execcli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/execcli/runcmd"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/execx/execobs"
	_ "github.com/art-runtime/art/lib/execx/netallow" // artexec-cli runs what the artexec binary hands it: network allow too
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/vocab"
)

// RunCmd is run in the kong grammar: runcmd.Cmd's fields and tags, with
// the methods kong calls.
type RunCmd runcmd.Cmd

// Help shows examples.
func (c *RunCmd) Help() string {
	return `Runs PROGRAM (a bare name, looked up only in the policy's path) in the
workspace with a fresh environment, its own process group, a timeout that
kills every process of the task, and bounded head-and-tail output capture.
Prints the Result as JSON on stdout once the program started, whatever
happened to it (with -o text: passes the program's stdout and stderr
through as it writes them, then a one-line summary on stderr; --result
FILE keeps the Result in FILE in either mode), and exits with its exit code; 124 when it timed out, 130
when artexec was interrupted, 128+N when a signal we did not send killed it.
Before anything starts: 126 refused (not allowed, outside the workspace, a
limit above the policy's), 127 not found, 2 invalid input, 125 isolation
unavailable.

Without --policy the flags are the policy: the program after -- is allowed
(or those given with --allow), the workspace is the current directory.
With --policy, policy flags may only narrow it: --allow intersects (a name
the policy does not allow is refused), --workspace must be beneath the
policy's, --isolation may only be stronger, --network only narrower, --allow-host
only a destination the policy lists, --max-* may only be lower.

Example:
  artexec run --timeout 30s -- go test ./...
  artexec run -o text --result result.json -- make check   # live output in a CI log
  artexec run --isolation landlock --output-bytes 65536 --stream -- make check
  artexec run --isolation strict --network loopback -- go test ./...
  artexec run --isolation strict --allow-host proxy.golang.org --allow-host sum.golang.org -- go mod download
  artexec run --policy ci-policy.json --manifest task.json`
}

// Run builds the policy and task, runs it and prints the Result; with
// --events, the run's events go to the sinks too.
func (c *RunCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	rc := (*runcmd.Cmd)(c)
	t, p, err := rc.Build(std)
	if err != nil {
		return err
	}
	run := runcmd.Runner(execx.Run)
	if em := events(std, g); em != nil {
		// task.started and task.finished (refusals too), redacted, through
		// lib/obs; a sink failure is a warning, never the run's failure.
		defer em.Close()
		run = execobs.TaskRunner{Emitter: em, Traceparent: os.Getenv(vocab.EnvTraceparent)}.RunTask
	}
	return rc.Execute(ctx, std, g.JSON(std), run, t, p)
}

// events opens the --events sinks; one that cannot be opened is reported
// and the run goes on without events (docs/architecture.md, "How the pieces compose").
func events(std cli.IO, g *cli.Globals) *obs.Emitter {
	if len(g.Events) == 0 {
		return nil
	}
	em, err := obs.Open(g.Events, obs.Options{Warn: obs.WarnTo("artexec", std.Err), Stdout: std.Out})
	if err != nil {
		fmt.Fprintf(std.Err, "artexec: warning: --events: %s (no events emitted)\n", strings.Join(strings.Fields(err.Error()), " "))
		return nil
	}
	return em
}
