package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/release"
)

// VerifyTagCmd gates publication on a signed tag at main's tip.
type VerifyTagCmd struct {
	Tag      string `arg:"" name:"ref" help:"Tag to verify (v1.2.3 or refs/tags/v1.2.3)."`
	Repo     string `name:"repo" default:"." placeholder:"DIR" help:"Repository holding the tag."`
	Main     string `name:"main" placeholder:"REF" help:"Branch the tag must be at the tip of (default: refs/remotes/origin/main if present, else refs/heads/main)."`
	Contract string `name:"contract" placeholder:"FILE" help:"ReleaseContract the release will be built with, instead of release.json at the tag's commit."`
}

// Help shows an example.
func (c *VerifyTagCmd) Help() string {
	return `Refuses, with exit 1, a tag that is lightweight, whose tag object carries
another name (moved), that is unsigned, whose signature git verify-tag does
not accept (GPG, or SSH with gpg.format=ssh and gpg.ssh.allowedSignersFile),
whose commit is not exactly the tip of main, or that is not a release version
under the contract (release.json at the tag's commit, or --contract FILE):
the tag prefix and a canonical semantic version the go command accepts for
the module, as build requires. On a refused signature it quotes git's reason
(an unlisted principal, an expired key), not its "Good" line. A missing tag
exits 4.
Prints what was verified (JSON, or a line with -o text).

Example:
  git -c gpg.ssh.allowedSignersFile=.github/allowed_signers verify-tag v1.2.0  # what it runs
  artrelease verify-tag v1.2.0 && artrelease build --ref v1.2.0 --out dist/`
}

// Run verifies the tag.
func (c *VerifyTagCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := inputs(c.Repo, c.Contract); err != nil {
		return err
	}
	em := events(std, g)
	defer em.Close()
	rep, err := release.VerifyTag(ctx, release.VerifyTagOptions{Repo: c.Repo, Tag: c.Tag, MainRef: c.Main, ContractFile: c.Contract})
	attrs := map[string]any{"tag": c.Tag}
	if rep != nil {
		attrs["commit"], attrs["main_ref"], attrs["main"] = rep.Commit, rep.MainRef, rep.Main
	}
	emit(ctx, em, "verify-tag", "release.tag_verified", attrs, err)
	if err != nil {
		return err
	}
	if g.JSON(std) {
		return writeJSON(std, rep)
	}
	fmt.Fprintf(std.Out, "OK tag %s: signed (%s), at the tip of %s (%s)\n", rep.Tag, rep.Signature, rep.MainRef, rep.Commit)
	return nil
}
