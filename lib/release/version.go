package release

import (
	"context"
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
	return identify(ref, commit, reachable, prefix)
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
			return nil, exitcode.Errorf(exitcode.Usage, "tag %s: not a release tag: want %s followed by a semantic version such as %s1.2.3", name, prefixOrNone(prefix), prefix)
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
