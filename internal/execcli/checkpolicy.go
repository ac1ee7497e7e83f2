package execcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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

// Run validates and prints the policy: JSON, or with -o text (auto on a
// terminal) "FILE: ok" and one line per rule.
func (c *CheckPolicyCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	p, err := execx.LoadPolicy(c.File)
	if err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	if !g.JSON(std) {
		_, err := io.WriteString(std.Out, policyText(c.File, p))
		return err
	}
	b, err := jsonx.MarshalIndent(p)
	if err != nil {
		return err
	}
	_, err = std.Out.Write(b)
	return err
}

func policyText(file string, p *execx.Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ok\n", file)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	list := func(v []string) string {
		if len(v) == 0 {
			return "(none)"
		}
		return strings.Join(v, " ")
	}
	fmt.Fprintf(tw, "allow\t%s\n", list(p.Allow))
	fmt.Fprintf(tw, "workspace\t%s\n", p.Workspace)
	if p.Path != nil {
		fmt.Fprintf(tw, "path\t%s\n", list(p.Path))
	}
	fmt.Fprintf(tw, "env_allow\t%s\n", list(p.EnvAllow))
	iso := string(p.Isolation)
	if p.IsolationBestEffort {
		iso += " (best effort)"
	}
	fmt.Fprintf(tw, "isolation\t%s\n", iso)
	net := string(p.NetworkMode())
	if p.Network.Mode == "" {
		net += " (the isolation's default)"
	}
	if p.NetworkMode() == execx.NetworkAllow {
		net += ": " + list(p.Network.Allow)
	}
	fmt.Fprintf(tw, "network\t%s\n", net)
	if m, err := json.Marshal(p.Max); err == nil && string(m) != "{}" {
		fmt.Fprintf(tw, "max\t%s\n", m)
	}
	tw.Flush()
	return b.String()
}
