package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/release"
)

// CheckCmd validates a contract and proves reproducibility.
type CheckCmd struct {
	Repo     string `name:"repo" default:"." placeholder:"DIR" help:"Repository to check."`
	Ref      string `name:"ref" default:"HEAD" placeholder:"REF" help:"Revision to check."`
	Contract string `name:"contract" placeholder:"FILE" help:"ReleaseContract file to use instead of release.json in the tree at REF."`
}

// Help shows an example.
func (c *CheckCmd) Help() string {
	return `For pull requests and main: read-only. Decodes the contract at REF, builds
the release (with provenance) twice into temporary directories, requires the
two to be byte-identical, verifies one, and removes both. Nothing in the
repository or the working directory is written.

Prints a report (JSON, or a line with -o text). Exits 0 when reproducible,
1 when the builds differ or do not verify, 2 for an invalid contract.

Example:
  artrelease check
  artrelease check --repo ../other --ref origin/main`
}

// Run checks.
func (c *CheckCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := inputs(c.Repo, c.Contract); err != nil {
		return err
	}
	em := events(std, g)
	defer em.Close()
	rep, err := release.Check(ctx, release.CheckOptions{Repo: c.Repo, Ref: c.Ref, ContractFile: c.Contract, Progress: progress(std)})
	emit(ctx, em, "check", "release.checked", map[string]any{
		"ref": c.Ref, "name": rep.Name, "version": rep.Version, "commit": rep.Commit,
		"reproducible": rep.Reproducible, "differ": len(rep.Differ),
	}, err)
	if err != nil && rep.Commit == "" {
		return err
	}
	if g.JSON(std) {
		if werr := writeJSON(std, rep); werr != nil {
			return werr
		}
	} else if rep.Reproducible {
		fmt.Fprintf(std.Out, "OK %s %s from commit %s: two builds byte-identical (%d artifacts)\n", rep.Name, rep.Version, rep.Commit, len(rep.Artifacts))
	}
	return err
}
