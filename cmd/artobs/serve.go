package main

import (
	"context"
	"os"
	"syscall"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/internal/webcli"
	"github.com/art-runtime/art/lib/exitcode"
)

// WebBinary is the program `artobs serve` executes, found beside artobs
// (else on PATH: clibase.Companion).
const WebBinary = "artobs-web"

// ServeCmd serves the read-only web view (docs/web.md) by executing
// artobs-web: the HTTP stack stays out of artobs
// (internal/layout/binaries_test.go).
type ServeCmd struct {
	webcli.Flags
}

// Help shows examples.
func (c *ServeCmd) Help() string { return webcli.Help }

// Run checks the flags, then replaces this process with artobs-web.
func (c *ServeCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if _, err := c.Check(); err != nil {
		return err
	}
	web, err := clibase.Companion(WebBinary)
	if err != nil {
		return exitcode.WithHint(exitcode.Errorf(exitcode.ProgramNotFound, "serve: %v", err),
			"artobs serve runs artobs-web from the directory artobs is in (else from PATH): install both (make install)")
	}
	args := []string{WebBinary}
	if g.Dir != "" {
		args = append(args, "--dir", g.Dir)
	}
	args = append(args, c.Args()...)
	env := os.Environ()
	if c.Token != "" {
		env = append(env, webcli.TokenEnv+"="+c.Token)
	}
	if err := cancelled(ctx); err != nil {
		return err
	}
	return exitcode.Errorf(exitcode.Internal, "serve: exec %s: %v", web, syscall.Exec(web, args, env))
}

// cancelled returns ctx's cause once it has ended.
func cancelled(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
