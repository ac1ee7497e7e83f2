package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/release"
)

// VerifyCmd re-checks a release directory.
type VerifyCmd struct {
	Dir          string `arg:"" name:"dir" help:"Release directory written by artrelease build."`
	Repo         string `name:"repo" placeholder:"REPO" help:"Also rebuild the manifest's commit from this repository and require byte-identical files."`
	Contract     string `name:"contract" placeholder:"FILE" help:"The ReleaseContract file a release built with --contract was built under (its sha256 must be the manifest's)."`
	SkipBinaries bool   `name:"skip-binaries" help:"Do not rebuild the binaries from the source archive (listed as unchecked)."`
	Strict       bool   `name:"strict" help:"Exit 1 when any field could not be checked (without --repo: tags, history, nested module versions; without the contract: licence, supplier)."`
}

// Help shows an example.
func (c *VerifyCmd) Help() string {
	return `Recomputes everything the directory claims from its files: SHA256SUMS and
manifest.json agree with each other and with the directory (a missing or
extra file fails), every size and sha256 matches, the archive decompresses to
the recorded tar with normalised headers and no path git would refuse, the
SBOM is the one the archive's own go.mod/go.sum/go.work files give, and the
provenance names exactly these artifacts and binaries. A release with binaries
has them rebuilt from its own source archive with the toolchain the manifest
names, and every binary, archive and binary SBOM compared byte for byte
(--skip-binaries leaves that out and says so). With --repo it also rebuilds
everything from the repository and compares bytes. A release built with --contract FILE needs
the same --contract FILE here.

What the files alone cannot prove — the tag and previous tag, the changes the
notes list, a nested module's version (all from the repository), and the
licence and supplier of a release built with --contract FILE when that file is
not given — is listed per field (UNCHECKED lines, "unchecked" in JSON);
--strict makes any such field a failure. With --repo nothing stays unchecked.

Prints a report (JSON, or one line per problem with -o text). Exits 0 when
everything verifies, 1 on any mismatch (with --strict, also on any unchecked
field), 4 when DIR does not exist.

Example:
  artrelease verify dist/
  artrelease verify dist/ --repo .
  artrelease verify dist/ --repo . --contract release.json
  artrelease verify dist/ --strict -o text   # exit 1: tags, notes unchecked
  artrelease verify dist/ --skip-binaries     # no Go toolchain at hand`
}

// Run verifies.
func (c *VerifyCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := inputs(c.Repo, c.Contract); err != nil {
		return err
	}
	em := events(std, g)
	defer em.Close()
	rep, err := release.Verify(ctx, release.VerifyOptions{Dir: c.Dir, Repo: c.Repo, ContractFile: c.Contract, Strict: c.Strict, SkipBinaries: c.SkipBinaries})
	attrs := map[string]any{"dir": c.Dir}
	if rep != nil {
		attrs["name"], attrs["version"], attrs["commit"] = rep.Name, rep.Version, rep.Commit
		attrs["problems"], attrs["rebuilt"] = len(rep.Problems), rep.Rebuilt
	}
	emit(ctx, em, "verify", "release.verified", attrs, err)
	if rep != nil {
		// A problem naming an option is worded in this command's flags.
		for i, p := range rep.Problems {
			if p.Err != nil {
				rep.Problems[i].Msg = cli.Message(p.Err, c.FieldFlags())
			}
		}
		for i, u := range rep.Unchecked {
			if u.Reason != nil {
				rep.Unchecked[i].Why = u.Reason.RenderHint(c.FieldFlags().Name)
			}
		}
	}
	if rep != nil && (rep.Name != "" || len(rep.Problems) > 0) {
		if g.JSON(std) {
			if werr := writeJSON(std, rep); werr != nil {
				return werr
			}
		} else {
			for _, p := range rep.Problems {
				fmt.Fprintf(std.Out, "FAIL %s\n", p)
			}
			for _, u := range rep.Unchecked {
				fmt.Fprintf(std.Out, "UNCHECKED %s\n", u)
			}
			if rep.OK {
				fmt.Fprintf(std.Out, "OK %s %s: %d files verified", rep.Name, rep.Version, len(rep.Files))
				if rep.Rebuilt {
					fmt.Fprint(std.Out, ", identical to a rebuild")
				}
				if n := len(rep.Unchecked); n > 0 {
					fmt.Fprintf(std.Out, ", %d fields unchecked", n)
				}
				fmt.Fprintln(std.Out)
			}
		}
	}
	return err
}
