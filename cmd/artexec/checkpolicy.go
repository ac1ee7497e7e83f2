package main

import (
	"context"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// CheckPolicyCmd validates a Policy document.
type CheckPolicyCmd struct {
	File string `arg:"" name:"file" help:"Policy document."`
}

// Help shows an example.
func (c *CheckPolicyCmd) Help() string {
	return `Decodes the policy strictly (an unknown or duplicate field, a wrong type or
trailing data is an error naming the field path), applies defaults, checks
every rule (absolute workspace that exists, bare program names, absolute path
entries, known isolation backend, non-negative ceilings) and prints the
policy as it will be used. Exits 2 naming the first problem.

Example:
  artexec check-policy ci-policy.json`
}

// Run validates and prints the policy.
func (c *CheckPolicyCmd) Run(ctx context.Context, std cli.IO) error {
	p, err := execx.LoadPolicy(c.File)
	if err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	b, err := jsonx.MarshalIndent(p)
	if err != nil {
		return err
	}
	_, err = std.Out.Write(b)
	return err
}
