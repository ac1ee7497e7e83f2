package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/release"
)

// BuildCmd writes a release directory.
type BuildCmd struct {
	Ref        string `name:"ref" required:"" placeholder:"REF" help:"Revision to release: a tag (vX.Y.Z gives version X.Y.Z), a branch, HEAD or a commit id."`
	Repo       string `name:"repo" default:"." placeholder:"DIR" help:"Repository to read (a worktree or a bare repository); only its objects are read."`
	Contract   string `name:"contract" placeholder:"FILE" help:"ReleaseContract file to use instead of release.json in the tree at REF."`
	Out        string `name:"out" required:"" placeholder:"DIR" help:"Output directory: must be new or empty (see --force)."`
	Force      bool   `name:"force" help:"Replace a non-empty output directory (the old one is removed only after the new one is in place)."`
	Provenance bool   `name:"provenance" help:"Also write NAME-VERSION.intoto.json, an unsigned in-toto Statement with an SLSA provenance v1 predicate."`
}

// Help shows an example.
func (c *BuildCmd) Help() string {
	return `Reads the commit REF names from the object database (never the worktree:
uncommitted and untracked files cannot reach an artifact) and writes into
--out:

  NAME-VERSION.tar.gz     source archive: sorted paths, one top directory,
                          mtime = commit time, uid/gid 0, no owner names,
                          modes 644/755, symlinks kept, no gzip name or time
  NAME-VERSION.spdx.json  SPDX 2.3 SBOM: the source and every go.mod module
  NOTES.md                changes since the previous release tag
  NAME_VERSION_OS_ARCH.tar.gz (.zip for windows)
                          with "binaries" in the contract: the programs
                          built from the source archive for that platform,
                          plus the contract's archive_files
  BIN_VERSION_OS_ARCH.spdx.json  SBOM of one binary: the modules it links,
                          their go.sum hashes and detected licences
  NAME-VERSION.intoto.json   with --provenance
  manifest.json           commit, tree, tag, toolchain, every size and sha256
  SHA256SUMS              sha256sum -c compatible (and checksums_file, e.g.
                          checksums.txt, with the same lines)

Binaries are built by the go command from the release's source archive
extracted into a fresh directory (never the worktree): -trimpath,
-buildvcs=false, -ldflags with -buildid=, GOFLAGS=-mod=readonly, GOWORK=off,
GOENV=off, CGO_ENABLED=0 unless the binary says cgo; the module and build
caches and GOPROXY are the caller's. A contract "toolchain" other than the
go command's exits 126 naming GOTOOLCHAIN.

The version is the tag's (REF itself, or the highest vX.Y.Z tag on the
commit), else a Go pseudo-version (0.0.0-20260102150405-abcdef123456).
The same commit always gives the same bytes. Prints the manifest (JSON) or a
summary (-o text). A non-empty --out exits 3; an unknown REF exits 4; an
invalid contract exits 2.

Example:
  artrelease build --ref v1.2.0 --out dist/
  cd dist && sha256sum -c SHA256SUMS
  GOTOOLCHAIN=go1.26.0 artrelease build --ref v1.2.0 --out dist/ --provenance`
}

// Run builds.
func (c *BuildCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := inputs(c.Repo, c.Contract); err != nil {
		return err
	}
	em := events(std, g)
	defer em.Close()
	m, err := release.Build(ctx, release.BuildOptions{
		Repo: c.Repo, Ref: c.Ref, ContractFile: c.Contract, Out: c.Out,
		Force: c.Force, Provenance: c.Provenance, Progress: progress(std),
	})
	attrs := map[string]any{"ref": c.Ref, "out": c.Out}
	if m != nil {
		attrs["name"], attrs["version"], attrs["commit"], attrs["tag"] = m.Name, m.Version, m.Commit, m.Tag
		attrs["artifacts"] = artifactAttrs(m.Artifacts)
	}
	emit(ctx, em, "build", "release.built", attrs, err)
	if err != nil {
		return err
	}
	if g.JSON(std) {
		return writeJSON(std, m)
	}
	fmt.Fprintf(std.Out, "%s %s from commit %s", m.Name, m.Version, m.Commit)
	if m.Tag != "" {
		fmt.Fprintf(std.Out, " (tag %s)", m.Tag)
	}
	fmt.Fprintln(std.Out)
	for _, a := range m.Artifacts {
		fmt.Fprintf(std.Out, "%s  %s  %d bytes\n", a.SHA256, filepath.Join(c.Out, a.Name), a.Size)
	}
	return nil
}
