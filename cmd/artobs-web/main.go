// Command artobs-web serves the read-only web view of art's state
// (lib/web, docs/web.md). Users start it as `artobs serve`, which checks
// the flags and executes this binary found beside itself (git-style): the
// HTTP stack lives here, so artobs links none.
package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/webcli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/web"
)

// CLI is artobs-web's grammar: the flags of `artobs serve`.
type CLI struct {
	cli.Globals
	webcli.Flags
}

// Help shows an example.
func (c *CLI) Help() string { return webcli.Help }

// Run serves until interrupted.
func (c *CLI) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	s, err := c.Check()
	if err != nil {
		return err
	}
	home, err := g.Home()
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return exitcode.Errorf(exitcode.Internal, "--listen %s: %v", s.Listen, err)
	}
	scheme := "http://" + ln.Addr().String() + "/"
	if s.Token != "" {
		scheme += " (token required)"
	}
	fmt.Fprintf(std.Err, "artobs serve: read-only view of %s on %s\n", home, scheme)
	s.Home = home
	err = web.New(*s).Serve(ctx, ln)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func main() { os.Exit(run()) }

func run() int {
	return cli.Main("artobs-web", "The read-only web view behind 'artobs serve'.", &CLI{})
}
