package release

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/github/go-spdx/v2/spdxexp"
	"golang.org/x/mod/module"

	"github.com/art-runtime/art/lib/jsonx"
)

// Artifact kinds a contract can ask for. The manifest and SHA256SUMS are
// always written; provenance is asked for per build (--provenance), since it
// describes a build rather than the release.
const (
	ArtifactArchive    = "archive"
	ArtifactSBOM       = "sbom"
	ArtifactNotes      = "notes"
	ArtifactProvenance = "provenance"
)

// ContractArtifacts lists the kinds a contract's "artifacts" may name.
var ContractArtifacts = []string{ArtifactArchive, ArtifactSBOM, ArtifactNotes}

// Submodule policies.
const (
	SubmodulesRefuse = "refuse"
	SubmodulesOmit   = "omit"
)

// SubmodulePolicies lists the values of "submodules".
var SubmodulePolicies = []string{SubmodulesRefuse, SubmodulesOmit}

// Notes grouping styles.
const (
	GroupConventional = "conventional"
	GroupNone         = "none"
)

// NoteGroupings lists the values of "notes.group".
var NoteGroupings = []string{GroupConventional, GroupNone}

// Contract is a repository's ReleaseContract: what a release of it is. It is
// read from the tree of the commit being released (release.json), so the
// contract that built a release is the one committed with it.
type Contract struct {
	jsonx.TypeMeta
	// Comment is the "//" member: notes for the people editing the file
	// (JSON has no comments). artrelease ignores it.
	Comment []string `json:"//,omitempty"`
	// Name is the release name: the archive is NAME-VERSION.tar.gz and every
	// path in it starts with NAME-VERSION/.
	Name string `json:"name"`
	// Module is the Go module path; when the tree has a go.mod at its root
	// it must declare this module, and the SBOM's purls are built from it.
	Module string `json:"module,omitempty"`
	// License is the SPDX license expression of the source.
	License string `json:"license"`
	// Artifacts is the set built besides the manifest and SHA256SUMS
	// (default: archive, sbom, notes; archive is required).
	Artifacts []string `json:"artifacts,omitempty"`
	// Version says how a version is read from a tag.
	Version VersionPolicy `json:"version,omitempty"`
	// Notes says how NOTES.md is written.
	Notes NotesPolicy `json:"notes,omitempty"`
	// Submodules is "refuse" (default) or "omit" (gitlinks are left out of
	// the archive and listed in the manifest).
	Submodules string `json:"submodules,omitempty"`
	// Supplier is the organization that publishes the release: the SBOM's
	// supplier of the source package and its Organization creator. Empty:
	// derived from the module path (supplierOf).
	Supplier string `json:"supplier,omitempty"`
	// Toolchain pins the Go toolchain that builds the binaries ("go1.26.0"):
	// a build by any other refuses to start. Empty: whatever go is on PATH,
	// recorded in the manifest and provenance.
	Toolchain string `json:"toolchain,omitempty"`
	// Binaries are the Go programs built from the source archive.
	Binaries []Binary `json:"binaries,omitempty"`
	// ArchiveFiles are tree paths (LICENSE, README.md) copied into every
	// binary archive beside the binaries.
	ArchiveFiles []string `json:"archive_files,omitempty"`
	// ChecksumsFile, when set, is a second checksum file in the same format
	// as SHA256SUMS under another name (goreleaser's "checksums.txt").
	ChecksumsFile string `json:"checksums_file,omitempty"`
}

// Binary is one Go program of a release, built for each of its platforms.
type Binary struct {
	// Main is the main package's directory in the tree ("./cmd/x").
	Main string `json:"main"`
	// Name is the program's file name (".exe" is added for windows).
	Name string `json:"name"`
	// Platforms are GOOS/GOARCH pairs, optionally with the GOARCH variant
	// (linux/arm/7, linux/amd64/v3).
	Platforms []string `json:"platforms"`
	// Ldflags are joined with spaces into go build's -ldflags (which splits
	// them by its own quoting rules: quote a value holding a space);
	// {{.Version}}, {{.Commit}} and {{.Tag}} are replaced by the release's.
	// -buildid= is always added.
	Ldflags []string `json:"ldflags,omitempty"`
	// Tags are build tags.
	Tags []string `json:"tags,omitempty"`
	// Cgo builds with CGO_ENABLED=1 (default 0: a C toolchain is one more
	// input a second machine must match).
	Cgo bool `json:"cgo,omitempty"`
}

// VersionPolicy maps tags to versions.
type VersionPolicy struct {
	// TagPrefix precedes the semantic version in a release tag (default "v":
	// tag v1.2.3 is version 1.2.3). A pointer, so that an explicit ""
	// (tags such as 7.8.1) is told apart from an absent field.
	TagPrefix *string `json:"tag_prefix,omitempty"`
}

// Prefix is the tag prefix in force: the contract's, "v" when it has none.
func (p VersionPolicy) Prefix() string {
	if p.TagPrefix == nil {
		return "v"
	}
	return *p.TagPrefix
}

// NotesPolicy shapes NOTES.md.
type NotesPolicy struct {
	// Group is "conventional" (default: sections by conventional-commit
	// type) or "none" (one list in history order).
	Group string `json:"group,omitempty"`
	// Changelog is the path in the tree of the hand-kept changelog the notes
	// link to; it must exist at the released commit. Empty: no link.
	Changelog string `json:"changelog,omitempty"`
}

// DocumentKind implements jsonx.Document.
func (*Contract) DocumentKind() string { return KindContract }

// Default fills what the contract leaves out.
func (c *Contract) Default() {
	if len(c.Artifacts) == 0 {
		c.Artifacts = []string{ArtifactArchive, ArtifactSBOM, ArtifactNotes}
	}
	if c.Notes.Group == "" {
		c.Notes.Group = GroupConventional
	}
	if c.Submodules == "" {
		c.Submodules = SubmodulesRefuse
	}
}

// nameRE keeps release names safe as a file name and a tar path prefix.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// prefixRE keeps a tag prefix to characters a ref name allows and no slash
// games.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]{0,32}(/[A-Za-z0-9._-]{1,32})*/?$`)

// Validate checks the contract's semantic limits.
func (c *Contract) Validate() error {
	if !nameRE.MatchString(c.Name) {
		return jsonx.Errorf("contract.name", "%q must be 1-64 of a-z, 0-9, '.', '_', '-', starting with a letter or digit", c.Name)
	}
	if c.Module != "" {
		if err := module.CheckPath(c.Module); err != nil {
			return jsonx.Errorf("contract.module", "%q is not a valid Go module path: %v", c.Module, err)
		}
	}
	if strings.TrimSpace(c.License) == "" {
		return jsonx.Errorf("contract.license", "required (an SPDX license expression such as \"Apache-2.0\")")
	}
	if ok, bad := spdxexp.ValidateLicenses([]string{c.License}); !ok {
		return jsonx.Errorf("contract.license", "%q is not a valid SPDX license expression (%s)", c.License, strings.Join(bad, ", "))
	}
	seen := map[string]bool{}
	for i, a := range c.Artifacts {
		if !slices.Contains(ContractArtifacts, a) {
			return jsonx.Errorf(jsonPath("contract.artifacts", i), "unknown artifact %q (want one of %s)", a, strings.Join(ContractArtifacts, ", "))
		}
		if seen[a] {
			return jsonx.Errorf(jsonPath("contract.artifacts", i), "duplicate artifact %q", a)
		}
		seen[a] = true
	}
	if !seen[ArtifactArchive] {
		return jsonx.Errorf("contract.artifacts", "must include %q: every other artifact describes the archive", ArtifactArchive)
	}
	if !prefixRE.MatchString(c.Version.Prefix()) {
		return jsonx.Errorf("contract.version.tag_prefix", "%q is not a usable tag prefix", c.Version.Prefix())
	}
	if !slices.Contains(NoteGroupings, c.Notes.Group) {
		return jsonx.Errorf("contract.notes.group", "unknown grouping %q (want %s)", c.Notes.Group, strings.Join(NoteGroupings, " or "))
	}
	if c.Notes.Changelog != "" {
		if err := checkTreePath(c.Notes.Changelog); err != nil {
			return jsonx.Errorf("contract.notes.changelog", "%v", err)
		}
	}
	if c.Supplier != "" && (strings.TrimSpace(c.Supplier) != c.Supplier || strings.ContainsAny(c.Supplier, "\n\r()") || len(c.Supplier) > 128) {
		return jsonx.Errorf("contract.supplier", "%q must be an organization name: one line, at most 128 bytes, no parentheses, no leading or trailing space", c.Supplier)
	}
	if err := c.validateBinaries(); err != nil {
		return err
	}
	if !slices.Contains(SubmodulePolicies, c.Submodules) {
		return jsonx.Errorf("contract.submodules", "unknown policy %q (want %s)", c.Submodules, strings.Join(SubmodulePolicies, " or "))
	}
	return nil
}

// Wants reports whether the contract asks for an artifact kind.
func (c *Contract) Wants(kind string) bool { return slices.Contains(c.Artifacts, kind) }

// DecodeContract strictly decodes a ReleaseContract, applies defaults and
// validates it. Errors name the field and carry exit code 2.
func DecodeContract(data []byte) (*Contract, error) {
	var c Contract
	if err := jsonx.Decode(data, "contract", &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkTreePath accepts a clean relative slash path, as Git stores them.
func checkTreePath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "\x00") {
		return fmt.Errorf("%q is not a relative path in the tree", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%q is not a clean relative path in the tree", p)
		}
	}
	return nil
}

func jsonPath(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }
