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
	// PreviousLine is the highest earlier release tag of the whole
	// repository when it is not in the commit's history (a release cut
	// from a branch: v3.6.0 after v3.5.21, tagged on release-3.5); then
	// Previous names it and NotesFrom is its merge base with the commit.
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
	all, err := r.Tags(ctx, "")
	if err != nil {
		return nil, err
	}
	id, err := identify(ref, commit, reachable, prefix)
	if err != nil {
		return nil, err
	}
	return id, r.previousLine(ctx, id, reachable, all, prefix)
}

// previousLine sets where the notes of a tagged release start. The
// previous release is the highest earlier release tag in the commit's
// history (identify); but when the repository's highest earlier release —
// the previous version line — is not in that history (the release was cut
// from a branch, and the last release of the line before it was tagged on
// another branch), a history-only search reaches back to some old tag and
// lists years of commits. Then the previous release is that highest tag and
// the notes start from its merge base with the commit, and say so.
func (r *Repo) previousLine(ctx context.Context, id *Identity, reachable, all []RefTag, prefix string) error {
	id.NotesFrom = id.PreviousID
	if id.Tag == "" {
		return nil // an untagged build: its history's tags are its base
	}
	inHistory := map[string]bool{}
	for _, t := range reachable {
		inHistory[t.Name] = true
	}
	best, bestCommit, bestV := "", "", ""
	for _, t := range all {
		v, ok := tagVersion(t.Name, prefix)
		if !ok || t.Commit == "" || t.Commit == id.Commit.ID || !earlierRelease(v, id.GoVersionOfTag(prefix)) {
			continue
		}
		if best == "" || semver.Compare(v, bestV) > 0 || semver.Compare(v, bestV) == 0 && t.Name < best {
			best, bestCommit, bestV = t.Name, t.Commit, v
		}
	}
	if best == "" || inHistory[best] {
		return nil
	}
	out, err := r.git(ctx, "merge-base", id.Commit.ID, bestCommit)
	var ge *gitError
	if err != nil && !errors.As(err, &ge) {
		return err
	}
	id.Previous, id.PreviousID, id.PreviousLine = best, bestCommit, true
	id.NotesFrom = strings.TrimSpace(string(out)) // "": no common history
	return nil
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

// earlierRelease reports whether tag version v can be the previous release
// of version cur: lower, and not a pre-release when cur is a release
// (v1.1.0's notes run from v1.0.0, not from v1.1.0-rc.2).
func earlierRelease(v, cur string) bool {
	if semver.Compare(v, cur) >= 0 {
		return false
	}
	return semver.Prerelease(cur) != "" || semver.Prerelease(v) == ""
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
	// The previous release: the highest release tag reachable from the
	// commit, on another commit, below this version. A release skips
	// pre-releases, so v1.1.0's notes run from v1.0.0, not from v1.1.0-rc.2.
	var base string // highest reachable tag version of any kind, for pseudo-versions
	for _, t := range reachable {
		v, ok := tagVersion(t.Name, prefix)
		if !ok || t.Commit == commitID {
			continue
		}
		if base == "" || semver.Compare(v, base) > 0 {
			base = v
		}
		if id.Tag != "" && semver.Compare(v, id.GoVersion) >= 0 {
			continue
		}
		if id.Tag != "" && semver.Prerelease(id.GoVersion) == "" && semver.Prerelease(v) != "" {
			continue
		}
		cur, _ := tagVersion(id.Previous, prefix)
		if id.Previous == "" || semver.Compare(v, cur) > 0 || semver.Compare(v, cur) == 0 && t.Name < id.Previous {
			id.Previous, id.PreviousID = t.Name, t.Commit
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
