package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// IsolationCmd prints what this machine can enforce.
type IsolationCmd struct{}

// Help shows an example.
func (c *IsolationCmd) Help() string {
	return `Asks the kernel what it can enforce and prints it as JSON: the Landlock ABI
and what a landlock run enforces with it, whether user, PID and network
namespaces can be created (they are really created, not guessed), whether
sandbox-exec is there (macOS), and for each backend whether it runs without
--isolation-best-effort and the layers a run of it enforces here, as its
Result lists them in isolation.enforced (docs/artexec.md: Isolation, and
the threat model).

Example:
  artexec isolation
  artexec isolation | jq '.backends[] | select(.available) | .backend'`
}

// Run prints the capabilities.
func (c *IsolationCmd) Run(ctx context.Context, std cli.IO) error {
	b, err := jsonx.MarshalIndent(execx.Probe())
	if err != nil {
		return err
	}
	_, err = std.Out.Write(b)
	return err
}
