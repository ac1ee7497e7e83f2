// Package release owns art's release builder: the ReleaseContract document,
// a reader of Git objects through git plumbing, and the artifacts built from
// one exact commit — a normalised source archive, an SPDX 2.3 SBOM, canonical
// release notes, an optional in-toto/SLSA provenance statement, a manifest and
// a SHA256SUMS file; with binaries in the contract, the Go programs built
// from that source archive (gobuild.go), one deterministic archive per
// platform and an SBOM per binary from what it links (binsbom.go) — plus
// the checks that prove them: Verify re-derives every
// digest and invariant of a release directory, Check builds twice and
// compares, VerifyTag gates publication on a signed tag at main's tip.
//
// What it refuses:
//   - the worktree and the index: every byte comes from the object database
//     (git cat-file, git ls-tree), so uncommitted and untracked files never
//     reach an artifact;
//   - anything that varies between machines: owners, umasks, file mtimes,
//     locale, the wall clock, map order and the artrelease build itself are
//     never written into an artifact (times come from the commit);
//   - tree paths git itself refuses (treepath.go): ".git" in any spelling a
//     filesystem folds to it, "." and ".." components, empty components,
//     slashes inside a tree entry's name, a symlinked .gitmodules — an
//     archive holding .git/config runs code on the user's next git status;
//   - Go versions the go command would not name (goversion.go): versions
//     are computed with golang.org/x/mod by the go command's own rules;
//   - submodules (gitlink entries) unless the contract says "omit": a source
//     archive silently missing a submodule's files is not a source release;
//   - partial output: artifacts are written into a temporary directory beside
//     the output directory and renamed into place only when all are complete;
//   - signing: provenance is an unsigned statement for a later, isolated
//     publication step to sign (docs/artrelease.md).
package release

import "github.com/art-runtime/art/lib/exitcode"

// Document kinds.
const (
	KindContract = "ReleaseContract"
	KindManifest = "ReleaseManifest"
)

// File names inside a release directory that do not depend on the version.
const (
	ManifestName = "manifest.json"
	SumsName     = "SHA256SUMS"
	NotesName    = "NOTES.md"
	// ContractPath is where the contract lives in the tree at the built
	// commit, unless --contract names another file.
	ContractPath = "release.json"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrMismatch is a release directory that does not verify (exit 1).
	ErrMismatch = exitcode.Sentinel(exitcode.Failed, "release does not verify")
	// ErrUnchecked is a strict verify that could not check every field
	// without the repository (exit 1).
	ErrUnchecked = exitcode.Sentinel(exitcode.Failed, "fields not checked (strict)")
	// ErrNotReproducible is two builds of one commit that differ (exit 1).
	ErrNotReproducible = exitcode.Sentinel(exitcode.Failed, "builds are not byte-identical")
	// ErrTagRefused is a tag that may not be published (exit 1).
	ErrTagRefused = exitcode.Sentinel(exitcode.Failed, "tag refused")
	// ErrOutExists is a non-empty output directory without --force (exit 3).
	ErrOutExists = exitcode.Sentinel(exitcode.Conflict, "output directory is not empty")
	// ErrNotFound is a ref, tag, contract or repository that does not exist (exit 4).
	ErrNotFound = exitcode.Sentinel(exitcode.NotFound, "not found")
	// ErrSubmodule is a gitlink in the tree while the contract refuses them (exit 126).
	ErrSubmodule = exitcode.Sentinel(exitcode.Refused, "submodules are refused by the contract")
)
