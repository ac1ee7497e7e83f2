package release

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/art-runtime/art/lib/exitcode"
)

// goVersioner names a module of the tree at the built commit the way the go
// command does for `go list -m MODULE@COMMIT` (cmd/go/internal/modfetch,
// codeRepo.convert): the same tags, the same filters, golang.org/x/mod for
// every rule — the module path's major-version suffix, +incompatible for a
// v2+ tag of a module without go.mod, tags with build metadata usable only
// as a pseudo-version's base, pseudo-version-shaped tags ignored, and
// versions retracted by the go.mod at the module's latest release tag
// skipped. The SBOM's purls are therefore versions the go command accepts.
type goVersioner struct {
	commit    *Commit
	tree      map[string]TreeEntry // the commit's tree, by path
	onCommit  []string             // tag names pointing at the commit, sorted
	reachable []string             // tag names reachable from it (itself included), sorted
	all       []RefTag             // every tag of the repository
	// goModAt reads PATH at a commit; ok is false when there is no such file.
	goModAt func(commit, path string) (data []byte, ok bool, err error)
}

func newGoVersioner(r *Repo, commit *Commit, tree []TreeEntry, reachable, all []RefTag) *goVersioner {
	g := &goVersioner{commit: commit, tree: make(map[string]TreeEntry, len(tree)), all: all, goModAt: r.readFileAt}
	for _, e := range tree {
		g.tree[e.Path] = e
	}
	for _, t := range reachable {
		g.reachable = append(g.reachable, t.Name)
		if t.Commit == commit.ID {
			g.onCommit = append(g.onCommit, t.Name)
		}
	}
	sort.Strings(g.reachable)
	sort.Strings(g.onCommit)
	return g
}

// nameGoVersion sets the identity's Go version (the source package's purl)
// to the go command's version of the root module at the commit — asked for
// by the release tag when that tag is a Go version tag, so building by a tag
// the go command would refuse for this module (v1.5.0 of a /v2 module,
// v2.0.0 of a v1 module with a go.mod) is refused too, exit 2; building the
// commit by another name ignores such a tag, as the go command does for
// MOD@COMMIT. Without a release
// tag the release version is that Go version (a pseudo-version, or another
// tag the go command prefers), less any +incompatible.
func (id *Identity) nameGoVersion(g *goVersioner, modPath string) error {
	statVers := ""
	if id.Tag != "" && semver.IsValid(id.Tag) {
		statVers = id.Tag
	}
	v, err := g.Version(modPath, "", statVers)
	if err != nil && statVers != "" && !id.ByTag {
		// REF names the commit, not the tag: like `go list -m MOD@COMMIT`,
		// a tag the go command cannot use for this module does not name
		// the release.
		id.Tag, statVers = "", ""
		v, err = g.Version(modPath, "", "")
	}
	if err != nil {
		if statVers != "" {
			return exitcode.WithHint(fmt.Errorf("tag %s: %w", id.Tag, err),
				"the go command would refuse this version of %s: tag the version its major-version suffix allows", modPath)
		}
		return err
	}
	id.GoVersion = v
	if id.Tag == "" {
		id.Version = strings.TrimPrefix(semver.Canonical(v), "v")
	}
	return nil
}

// moduleVersionError is the go command's refusal of a version for a module
// path (an invalid version, exit 2).
func moduleVersionError(modPath, version string, err error) error {
	return exitcode.Wrap(exitcode.Usage, &module.ModuleError{Path: modPath, Err: &module.InvalidVersionError{Version: version, Err: err}})
}

// codeDirOf is where the go command looks for a module's tags: the module's
// directory in the tree, less a final major-version element (a module
// example.com/m/v2 kept in v2/ is tagged v2.x.y, not v2/v2.x.y).
func codeDirOf(modPath, dir string) string {
	_, pathMajor, _ := module.SplitPathVersion(modPath)
	if pathMajor != "" && path.Base(dir) == module.PathMajorPrefix(pathMajor) {
		dir = path.Dir(dir)
	}
	if dir == "." {
		dir = ""
	}
	return dir
}

// Version is the go command's version of modPath (kept in directory dir of
// the tree) at the commit. statVers is the version the user asked for
// (`MODULE@v1.2.3` when building that tag) or "" for the commit itself.
func (g *goVersioner) Version(modPath, dir, statVers string) (string, error) {
	_, pathMajor, ok := module.SplitPathVersion(modPath)
	if !ok {
		return "", fmt.Errorf("module %s: not a valid module path", modPath)
	}
	pseudoMajor := module.PathMajorPrefix(pathMajor)
	codeDir := codeDirOf(modPath, dir)
	tagPrefix := ""
	if codeDir != "" {
		tagPrefix = codeDir + "/"
	}
	has := func(p string) bool { _, ok := g.tree[p]; return ok }

	incompatibleOK := map[string]bool{}
	canUseIncompatible := func(v string) bool {
		if codeDir != "" || pathMajor != "" {
			return false
		}
		if has("go.mod") {
			return false
		}
		if v != "" && !strings.HasSuffix(statVers, "+incompatible") {
			major := semver.Major(v)
			ok, seen := incompatibleOK[major]
			if !seen {
				ok = !has(path.Join(major, "go.mod"))
				incompatibleOK[major] = ok
			}
			if !ok {
				return false
			}
		}
		return true
	}
	checkCanonical := func(v string) (string, error) {
		if v == strings.TrimSuffix(statVers, "+incompatible") {
			v = statVers
		}
		base := strings.TrimSuffix(v, "+incompatible")
		var errIncompatible error
		if !module.MatchPathMajor(base, pathMajor) {
			if canUseIncompatible(base) {
				v = base + "+incompatible"
			} else if pathMajor != "" {
				errIncompatible = moduleVersionError(modPath, v, fmt.Errorf("module path includes a major version suffix, so major version must match"))
			} else {
				prefix, _, _ := module.SplitPathVersion(modPath)
				errIncompatible = moduleVersionError(modPath, v, fmt.Errorf("module contains a go.mod file, so module path must match major version (%q)", path.Join(prefix, semver.Major(v))))
			}
		} else if strings.HasSuffix(v, "+incompatible") {
			errIncompatible = moduleVersionError(modPath, v, fmt.Errorf("+incompatible suffix not allowed: major version %s is compatible", semver.Major(v)))
		}
		if statVers != "" && statVers == module.CanonicalVersion(statVers) {
			if statBase := strings.TrimSuffix(statVers, "+incompatible"); statBase != base {
				return "", moduleVersionError(modPath, statVers, fmt.Errorf("resolves to version %v (%s is not a tag)", v, statBase))
			}
		}
		if errIncompatible != nil {
			return "", errIncompatible
		}
		return v, nil
	}

	isRetracted, err := g.retracted(modPath, dir, codeDir, pathMajor)
	if err != nil {
		return "", err
	}
	tagToVersion := func(tag string) (v string, canonical bool) {
		if !strings.HasPrefix(tag, tagPrefix) {
			return "", false
		}
		trimmed := tag[len(tagPrefix):]
		// The go command asks this of the whole tag, prefix included.
		if module.IsPseudoVersion(tag) {
			return "", false
		}
		v = semver.Canonical(trimmed)
		if v == "" || !strings.HasPrefix(trimmed, v) {
			return "", false
		}
		return v, v == trimmed
	}

	// The version the VCS reports: the tag asked for, when it is one of the
	// commit's tags.
	if statVers != "" {
		for _, t := range g.onCommit {
			if t == tagPrefix+statVers {
				if v, canonical := tagToVersion(t); canonical {
					if got, err := checkCanonical(v); err == nil {
						return got, nil
					}
				}
			}
		}
	}
	var highestCanonical, pseudoBase string
	for _, tag := range g.onCommit {
		v, canonical := tagToVersion(tag)
		if statVers != "" && semver.Compare(v, statVers) == 0 {
			if canonical {
				return checkCanonical(v)
			}
			pseudoBase = v
		}
		if canonical && semver.Compare(highestCanonical, v) < 0 && !isRetracted(v) {
			if module.MatchPathMajor(v, pathMajor) || canUseIncompatible(v) {
				highestCanonical = v
			}
		}
	}
	if highestCanonical != "" {
		return checkCanonical(highestCanonical)
	}
	allowed := func(tag string) bool {
		v, _ := tagToVersion(tag)
		if v == "" {
			return false
		}
		if !module.MatchPathMajor(v, pathMajor) && !canUseIncompatible(v) {
			return false
		}
		return !isRetracted(v)
	}
	if pseudoBase == "" {
		highest := ""
		for _, tag := range g.reachable {
			if !strings.HasPrefix(tag, tagPrefix) || !allowed(tag) {
				continue
			}
			if semtag := tag[len(tagPrefix):]; semver.Compare(semtag, highest) > 0 {
				highest = semtag
			}
		}
		if highest != "" {
			pseudoBase, _ = tagToVersion(tagPrefix + highest)
		}
	}
	t := time.Unix(g.commit.CommitterTime, 0).UTC()
	return checkCanonical(module.PseudoVersion(pseudoMajor, pseudoBase, t, g.commit.ID[:12]))
}

// retracted is the go command's retractedVersions: the retract directives
// of the go.mod at the module's highest release tag (else its highest
// tag) apply to every version of it.
func (g *goVersioner) retracted(modPath, dir, codeDir, pathMajor string) (func(string) bool, error) {
	none := func(string) bool { return false }
	p := ""
	if codeDir != "" {
		p = codeDir + "/"
	}
	var list []string
	commitOf := map[string]string{}
	for _, t := range g.all {
		if !strings.HasPrefix(t.Name, p) || t.Commit == "" {
			continue
		}
		v := t.Name[len(p):]
		if v == "" || v != semver.Canonical(v) || module.IsPseudoVersion(v) {
			continue
		}
		if err := module.CheckPathMajor(v, pathMajor); err != nil {
			continue // +incompatible versions carry no go.mod to retract with
		}
		list = append(list, v)
		commitOf[v] = t.Commit
	}
	if len(list) == 0 {
		return none, nil
	}
	semver.Sort(list)
	highest := list[len(list)-1]
	for i := len(list) - 1; i >= 0; i-- {
		if semver.Prerelease(list[i]) == "" {
			highest = list[i]
			break
		}
	}
	data, ok, err := g.goModAt(commitOf[highest], path.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	if !ok {
		return none, nil
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return none, nil // the go command ignores retractions it cannot read
	}
	var intervals []modfile.VersionInterval
	for _, r := range f.Retract {
		intervals = append(intervals, r.VersionInterval)
	}
	return func(v string) bool {
		for _, r := range intervals {
			if semver.Compare(r.Low, v) <= 0 && semver.Compare(v, r.High) <= 0 {
				return true
			}
		}
		return false
	}, nil
}
