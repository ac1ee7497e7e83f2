package execcli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
Result lists them in isolation.enforced, and for each network mode (host,
allow, loopback, none) whether a task can have it here (docs/artexec.md:
Isolation, Network, and the threat model).

Example:
  artexec isolation
  artexec isolation | jq '.backends[] | select(.available) | .backend'`
}

// Run prints the capabilities: JSON, or with -o text (auto on a
// terminal) one summary line and a table of the backends.
func (c *IsolationCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	caps := execx.Probe()
	if !g.JSON(std) {
		_, err := io.WriteString(std.Out, isolationText(caps))
		return err
	}
	b, err := jsonx.MarshalIndent(caps)
	if err != nil {
		return err
	}
	_, err = std.Out.Write(b)
	return err
}

func isolationText(c execx.Capabilities) string {
	var b strings.Builder
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(&b, "os %s, landlock ABI %d, namespaces user %s pid %s net %s, seatbelt %s, subreaper %s\n",
		c.OS, c.Landlock.ABI, yes(c.Namespaces.User), yes(c.Namespaces.PID), yes(c.Namespaces.Net), yes(c.Seatbelt), yes(c.Subreaper))
	var nets []string
	for _, n := range c.Networks {
		nets = append(nets, string(n.Mode)+" "+yes(n.Available))
	}
	fmt.Fprintf(&b, "network %s\n", strings.Join(nets, ", "))
	if c.Namespaces.Error != "" {
		fmt.Fprintf(&b, "namespaces: %s\n", c.Namespaces.Error)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tAVAILABLE\tENFORCES")
	for _, be := range c.Backends {
		enf := strings.Join(be.Enforces, ", ")
		if enf == "" {
			enf = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", be.Backend, yes(be.Available), enf)
	}
	tw.Flush()
	return b.String()
}
