package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// ErrIncompleteClone is a repository that lacks what a release reads: the
// commit's history is cut by a shallow clone, or a tag's tag object was
// never fetched (exit 126). A CI checkout makes both by default
// (actions/checkout fetches one commit and no tags), and building from it
// would silently give another release: notes from no previous tag,
// previous_tag null, a verify that "matches" a rebuild equally blind.
var ErrIncompleteClone = exitcode.Sentinel(exitcode.Refused, "incomplete clone")

// FetchHint is what makes an incomplete clone whole, in a shell and in a
// GitHub Actions job.
const FetchHint = "fetch the whole history and the tag objects: git fetch --tags --force --unshallow origin (GitHub Actions: actions/checkout with fetch-depth: 0, then git fetch --tags --force origin)"

// maxGrafts bounds the shallow boundary commits looked at one by one; a
// clone cut in more places than this is refused without asking.
const maxGrafts = 64

// checkComplete refuses a repository whose objects cannot give the release
// of commitID honestly: a shallow clone in which commitID's history is cut
// (so no earlier release tag, no notes range and no go version can be
// trusted), and, in a shallow clone, the tag ref that ref names (when it
// names one) pointing straight at a commit, which is what fetching a commit under a tag
// name gives (`git fetch --depth=1 --no-tags origin +SHA:refs/tags/v1`)
// while the tag in origin is annotated. A complete repository costs one
// git process.
func (r *Repo) checkComplete(ctx context.Context, commitID, ref string) error {
	out, err := r.git(ctx, "rev-parse", "--is-shallow-repository", "--git-dir")
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return r.checkRepo(ctx)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "true" {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return exitcode.WithHint(fmt.Errorf("repository %s: %w: %s", r.dir, ErrIncompleteClone, fmt.Sprintf(format, args...)), "%s", FetchHint)
	}
	if tagRef := r.tagRefOf(ctx, ref); tagRef != "" {
		if oid, ok := r.resolveRef(ctx, tagRef); ok {
			if obj, err := r.ReadObject(oid); err == nil && obj.Type == typeCommit {
				return refuse("%s points straight at a commit in a shallow clone: its tag object (tagger, signature) was not fetched, so the tag cannot be checked or recorded", strings.TrimPrefix(tagRef, "refs/tags/"))
			}
		}
	}
	gitDir := lines[1]
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(r.dir, gitDir)
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "shallow"))
	if err != nil {
		return refuse("a shallow clone (%v)", err)
	}
	grafts := strings.Fields(string(data))
	if len(grafts) > maxGrafts {
		return refuse("a shallow clone cut at %d commits: the history before them is missing", len(grafts))
	}
	for _, g := range grafts {
		if g == commitID {
			return refuse("a shallow clone: the history of %s is cut at the commit itself, so the previous release tag, the notes and the version cannot be read", short(commitID))
		}
		if _, err := r.git(ctx, "merge-base", "--is-ancestor", g, commitID); err == nil {
			return refuse("a shallow clone: the history of %s is cut at %s, so the previous release tag, the notes and the version cannot be read", short(commitID), short(g))
		} else if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// tagRefOf is the tag ref a build's --ref names ("v1.2.3" or
// "refs/tags/v1.2.3"), "" when it names no tag.
func (r *Repo) tagRefOf(ctx context.Context, ref string) string {
	name := strings.TrimPrefix(ref, "refs/tags/")
	if name == "" || !revisionOK(name) {
		return ""
	}
	if _, ok := r.resolveRef(ctx, "refs/tags/"+name); ok {
		return "refs/tags/" + name
	}
	return ""
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
