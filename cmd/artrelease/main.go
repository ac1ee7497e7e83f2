// Command artrelease builds byte-reproducible release artifacts from Git
// objects — a normalised source archive, an SPDX 2.3 SBOM, release notes, a
// manifest, SHA256SUMS and optionally an unsigned in-toto/SLSA provenance
// statement — and checks them: verify re-derives a release directory, check
// builds twice and compares, verify-tag gates publication on a signed tag at
// main's tip. All behaviour lives in lib/release; this is its CLI.
package main

import (
	"os"

	"github.com/art-runtime/art/internal/cli"
)

// CLI is artrelease's grammar (docs/artrelease.md).
type CLI struct {
	cli.Globals

	Build      BuildCmd          `cmd:"" help:"Build the release artifacts of a commit into a new directory."`
	Verify     VerifyCmd         `cmd:"" help:"Re-check every digest and invariant of a release directory; exit 1 on any mismatch."`
	Check      CheckCmd          `cmd:"" help:"Read-only: validate the contract and prove two builds are byte-identical."`
	VerifyTag  VerifyTagCmd      `cmd:"" name:"verify-tag" help:"Refuse a tag that is lightweight, unsigned, badly signed or not at main's tip."`
	Init       InitCmd           `cmd:"" help:"Write a starting release.json for the repository (module, cmd/* mains, licence)."`
	Completion cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() { os.Exit(run()) }

func run() int {
	return cli.Main("artrelease", "Byte-reproducible release artifacts from Git objects, and the checks that prove them.", &CLI{})
}
