package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/webcli"
	"github.com/art-runtime/art/lib/exitcode"
)

// WebBinary is the program `artobs serve` executes, found beside artobs.
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
	exe, err := os.Executable()
	if err != nil {
		return exitcode.Errorf(exitcode.Internal, "serve: find the artobs executable: %v", err)
	}
	web := filepath.Join(filepath.Dir(exe), WebBinary)
	if _, err := os.Stat(web); err != nil {
		return exitcode.WithHint(exitcode.Errorf(exitcode.ProgramNotFound, "serve: %s: %v", web, errors.Unwrap(err)),
			"artobs serve runs artobs-web from the directory artobs is in: install both (make install)")
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
