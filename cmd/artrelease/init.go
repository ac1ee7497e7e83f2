package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/release"
)

// InitCmd writes a starting release.json.
type InitCmd struct {
	Repo  string `name:"repo" default:"." placeholder:"DIR" help:"Repository directory to read (go.mod, LICENSE, README, cmd/*)."`
	Out   string `name:"out" placeholder:"FILE" help:"Where to write (default DIR/release.json); - writes to stdout."`
	Force bool   `name:"force" help:"Replace an existing file."`
}

// Help shows an example.
func (c *InitCmd) Help() string {
	return `Writes a starting ReleaseContract for the repository in DIR (--repo), read from its
files: the module path of go.mod, the release name (the module's last path
element), the licence detected in LICENSE (else LicenseRef-unknown, to be
replaced), one binary per package main under cmd/ for darwin/arm64,
linux/amd64, linux/arm64 and windows/amd64, the go command's toolchain as
the pin, LICENSE and README in every binary archive, and checksums.txt.
JSON has no comments: the notes are a "//" member, which artrelease ignores.
An existing file exits 3 unless --force.

Example:
  artrelease init
  artrelease init --repo ../other --out - | jq .binaries
  git add release.json && artrelease check`
}

// Run writes the contract.
func (c *InitCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if fi, err := os.Stat(c.Repo); err != nil || !fi.IsDir() {
		return fmt.Errorf("--repo %s: %w", c.Repo, release.ErrNotFound)
	}
	data, err := release.InitContract(c.Repo)
	if err != nil {
		return err
	}
	if c.Out == "-" {
		_, err := std.Out.Write(data)
		return err
	}
	out := c.Out
	if out == "" {
		out = filepath.Join(c.Repo, release.ContractPath)
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return exitcode.Errorf(exitcode.Usage, "--out %s: its directory does not exist", out)
	}
	if _, err := os.Stat(out); err == nil && !c.Force {
		return exitcode.WithHint(exitcode.Errorf(exitcode.Conflict, "%s exists", out), "pass --force to replace it, or --out - to print")
	}
	if err := fsx.WriteFile(out, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(std.Err, "wrote %s\n", out)
	return nil
}
