package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/art-runtime/art/lib/exitcode"
)

// Identity is what a ref resolves to: the commit, and the version and tags
// that name it.
type Identity struct {
	Commit     *Commit
	Tag        string // the release tag naming this version; "" for a pseudo-version
	Version    string // semantic version without the tag prefix or "v": 1.2.3
	GoVersion  string // the same as Go writes it: v1.2.3 (pseudo-versions included)
	Previous   string // the previous release tag reachable from the commit; "" if none
	PreviousID string // its commit
	// ByTag is set when REF itself named the release tag (not a branch or
	// commit that happens to carry it).
	ByTag bool
	// PreviousLine is set when Previous is not in the commit's history
	// (verify --repo rebuilds a release whose manifest names such a tag);
	// then NotesFrom is its merge base with the commit.
	PreviousLine bool
	// NotesFrom is the commit the notes start after: PreviousID, or the
	// merge base when PreviousLine; "" for every commit in the history.
	NotesFrom string
}

// Time is the commit's committer time in UTC: the only clock a release uses.
func (id *Identity) Time() time.Time { return time.Unix(id.Commit.CommitterTime, 0).UTC() }

// Resolve turns ref into an Identity under the contract's tag prefix.
//
// The version comes from a tag: REF itself when it names a tag (which must
// then be PREFIX + a canonical semantic version), else the highest such tag
// pointing at the commit. Without one the version is a Go pseudo-version
// (golang.org/ref/mod#pseudo-versions) from the highest release tag
// reachable from the commit: 0.0.0-20260102150405-abcdef123456 with no tag,
// 1.2.4-0.20260102150405-abcdef123456 after v1.2.3. Go's own scheme, so the
// SBOM's purl of an untagged build is the version `go get` would name.
func (r *Repo) Resolve(ctx context.Context, ref, prefix string) (*Identity, error) {
	commit, err := r.readRev(ctx, ref)
	if err != nil {
		return nil, err
	}
	reachable, err := r.Tags(ctx, commit.ID)
	if err != nil {
		return nil, err
	}
	id, err := identify(ref, commit, reachable, prefix)
	if err != nil {
		return nil, err
	}
	return id, r.previousRelease(ctx, id, reachable, prefix)
}

// previousRelease sets the previous release, where the notes start: the
// nearest release tag in the commit's own ancestry, as `git describe --tags
// --abbrev=0` finds it, among the tags that can precede this version — a
// lower version, not a pre-release when this is a release (v1.1.0's notes
// run from v1.0.0, not from v1.1.0-rc.2), and for an untagged build of the
// same major line (v0 and v1 are one line). Only the ancestry counts: a
// higher earlier version tagged later on a backport branch (v3.4.45 after
// v3.5.0) never changes an old release's notes, and a tag of another
// module path or major line (v28.2.2 of a +incompatible line above a
// v2.0.0-beta pseudo-version) is no predecessor.
func (r *Repo) previousRelease(ctx context.Context, id *Identity, reachable []RefTag, prefix string) error {
	id.Previous, id.PreviousID, id.PreviousLine, id.NotesFrom = "", "", false, ""
	cur := strings.TrimSuffix(id.GoVersion, "+incompatible")
	if id.Tag != "" {
		cur = id.GoVersionOfTag(prefix)
	}
	ok := map[string]RefTag{}
	args := describeArgs()
	for _, t := range reachable {
		v, isRelease := tagVersion(t.Name, prefix)
		if !isRelease || t.Commit == "" || t.Commit == id.Commit.ID || !precedes(v, cur, id.Tag == "") {
			continue
		}
		ok[t.Name] = t
		// A ref name cannot hold a glob character (git check-ref-format),
		// so the exact name is a pattern matching only itself.
		args = append(args, describeMatch, t.Name)
	}
	if len(ok) == 0 {
		return nil
	}
	out, err := r.git(ctx, append(args, id.Commit.ID)...)
	if err != nil {
		return err
	}
	found, isOK := ok[strings.TrimSpace(string(out))]
	if !isOK {
		return fmt.Errorf("git describe named %q, not one of the candidate tags", strings.TrimSpace(string(out)))
	}
	// Several candidates on the nearest commit: the highest version, then
	// the first name, whatever git's preference among them.
	best, bestV := found, ""
	for _, t := range ok {
		if t.Commit != found.Commit {
			continue
		}
		v, _ := tagVersion(t.Name, prefix)
		if bestV == "" || semver.Compare(v, bestV) > 0 || semver.Compare(v, bestV) == 0 && t.Name < best.Name {
			best, bestV = t, v
		}
	}
	id.Previous, id.PreviousID, id.NotesFrom = best.Name, best.Commit, best.Commit
	return nil
}

// precedes reports whether tag version v can be the previous release of
// version cur: lower; not a pre-release when cur is a release; for an
// untagged build (cur a pseudo-version) on cur's major line.
func precedes(v, cur string, untagged bool) bool {
	if semver.Compare(v, cur) >= 0 {
		return false
	}
	if untagged {
		return majorLine(v) == majorLine(cur)
	}
	return semver.Prerelease(cur) != "" || semver.Prerelease(v) == ""
}

// majorLine is a version's major version, v0 counting as v1: the go
// command's compatibility line (a module path without suffix holds both).
func majorLine(v string) string {
	if m := semver.Major(v); m != "v0" {
		return m
	}
	return "v1"
}

// setPrevious makes name the previous release (verify --repo rebuilds
// with the manifest's previous_tag, so tags made after the release cannot
// change its notes): the notes start at its commit when it is in the
// history, else at the merge base, as previousLine would have.
func (r *Repo) setPrevious(ctx context.Context, id *Identity, name string, reachable, all []RefTag) error {
	id.Previous, id.PreviousID, id.PreviousLine, id.NotesFrom = name, "", false, ""
	if name == "" {
		return nil
	}
	for _, t := range reachable {
		if t.Name == name {
			id.PreviousID, id.NotesFrom = t.Commit, t.Commit
			return nil
		}
	}
	for _, t := range all {
		if t.Name == name && t.Commit != "" {
			out, err := r.git(ctx, "merge-base", id.Commit.ID, t.Commit)
			var ge *gitError
			if err != nil && !errors.As(err, &ge) {
				return err
			}
			id.PreviousID, id.PreviousLine, id.NotesFrom = t.Commit, true, strings.TrimSpace(string(out))
			return nil
		}
	}
	return fmt.Errorf("previous tag %s: %w", name, ErrNotFound)
}

// GoVersionOfTag is the release tag's version in Go's form ("v1.2.3").
func (id *Identity) GoVersionOfTag(prefix string) string {
	v, _ := tagVersion(id.Tag, prefix)
	return v
}

// identify is Resolve for a commit already read, given the tags reachable
// from it.
func identify(ref string, commit *Commit, reachable []RefTag, prefix string) (*Identity, error) {
	commitID := commit.ID
	id := &Identity{Commit: commit}
	// REF names a tag when it is one of the tags on this commit, spelled
	// NAME, tags/NAME or refs/tags/NAME (git resolves a bare NAME to the tag
	// before a branch of the same name, so the commit matches).
	refTag := ""
	for _, t := range reachable {
		if t.Commit == commitID && (ref == t.Name || ref == "tags/"+t.Name || ref == "refs/tags/"+t.Name) {
			refTag = t.Name
		}
	}
	if refTag != "" {
		name := refTag
		v, ok := tagVersion(name, prefix)
		if !ok {
			return nil, exitcode.Fieldf(exitcode.Usage, "Tag", name, "tag %s: not a release tag: want %s followed by a semantic version such as %s1.2.3", name, prefixOrNone(prefix), prefix)
		}
		id.Tag, id.GoVersion, id.ByTag = name, v, true
	} else {
		for _, t := range reachable {
			if t.Commit != commitID {
				continue
			}
			if v, ok := tagVersion(t.Name, prefix); ok && (id.Tag == "" || semver.Compare(v, id.GoVersion) > 0) {
				id.Tag, id.GoVersion = t.Name, v
			}
		}
	}
	var base string // highest reachable tag version of any kind, for pseudo-versions
	for _, t := range reachable {
		v, ok := tagVersion(t.Name, prefix)
		if ok && t.Commit != commitID && (base == "" || semver.Compare(v, base) > 0) {
			base = v
		}
	}
	if id.Tag == "" {
		id.GoVersion = module.PseudoVersion("", base, id.Time(), commitID[:12])
	}
	id.Version = strings.TrimPrefix(id.GoVersion, "v")
	return id, nil
}

// tagVersion maps a tag name to its Go-style version ("v1.2.3") when it is
// the prefix followed by a canonical semantic version (no "v1.2" shorthand,
// no build metadata, which semver ordering ignores).
func tagVersion(name, prefix string) (string, bool) {
	if !strings.HasPrefix(name, prefix) {
		return "", false
	}
	v := "v" + strings.TrimPrefix(name, prefix)
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return "", false
	}
	return v, true
}

func prefixOrNone(p string) string {
	if p == "" {
		return "nothing"
	}
	return fmt.Sprintf("%q", p)
}
