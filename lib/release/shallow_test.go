package release

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

// shallowCI makes what a CI checkout of tag v0.2.0 makes: origin has
// annotated tags v0.1.0 and v0.2.0; the clone has v0.2.0's commit alone,
// fetched under the tag's name (git fetch --depth=1 --no-tags origin
// +SHA:refs/tags/v0.2.0), so the tag ref points straight at the commit.
func shallowCI(t *testing.T) (origin, clone *testRepo) {
	t.Helper()
	origin = newTestRepo(t)
	origin.write("release.json", testContract, 0o644)
	origin.write("go.mod", "module example.com/Fixture/app\n\ngo 1.22\n", 0o644)
	origin.write("CHANGELOG.md", "# Changelog\n", 0o644)
	origin.commit("feat: first")
	origin.git("tag", "-a", "-m", "v0.1.0", "v0.1.0")
	origin.write("a.txt", "a\n", 0o644)
	origin.commit("fix: second")
	origin.write("b.txt", "b\n", 0o644)
	sha := origin.commit("feat: third")
	origin.git("tag", "-a", "-m", "v0.2.0", "v0.2.0")

	clone = newTestRepo(t)
	clone.git("remote", "add", "origin", "file://"+origin.dir)
	clone.git("fetch", "-q", "--depth=1", "--no-tags", "origin", "+"+sha+":refs/tags/v0.2.0")
	clone.git("checkout", "-q", "v0.2.0")
	if got := clone.git("rev-parse", "--is-shallow-repository"); got != "true" {
		t.Fatalf("the clone is not shallow: %s", got)
	}
	return origin, clone
}

func wantIncomplete(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !errors.Is(err, ErrIncompleteClone) || exitcode.Of(err) != exitcode.Refused {
		t.Fatalf("%s: %v (exit %d); want ErrIncompleteClone, exit 126", what, err, exitcode.Of(err))
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %q lacks %q", what, err, msg)
	}
	var h *exitcode.Hinted
	if !errors.As(err, &h) || !strings.Contains(h.Hint(), "git fetch --tags --force --unshallow") || !strings.Contains(h.Hint(), "fetch-depth: 0") {
		t.Errorf("%s: hint %v; want the fetch that fixes it", what, err)
	}
}

// TestShallowCloneRefused: build, verify-tag and verify --repo refuse the
// checkout a CI job makes instead of giving another release (notes from
// no previous tag, previous_tag null), each with the fetch that fixes it;
// after that fetch the same commands give the release origin would.
func TestShallowCloneRefused(t *testing.T) {
	if _, err := exec.LookPath("bsdtar"); err != nil {
		t.Skip("bsdtar not installed")
	}
	ctx := context.Background()
	origin, clone := shallowCI(t)

	out := filepath.Join(t.TempDir(), "dist")
	_, err := Build(ctx, BuildOptions{Repo: clone.dir, Ref: "v0.2.0", Out: out})
	wantIncomplete(t, "build --ref v0.2.0", err, "v0.2.0 points straight at a commit in a shallow clone")
	_, err = Build(ctx, BuildOptions{Repo: clone.dir, Ref: "HEAD", Out: out})
	wantIncomplete(t, "build --ref HEAD", err, "history of")
	_, err = VerifyTag(ctx, VerifyTagOptions{Repo: clone.dir, Tag: "v0.2.0"})
	wantIncomplete(t, "verify-tag", err, "tag object (tagger, signature) was not fetched")

	// The release origin gives, verified against the shallow clone.
	dist, m := build(t, origin.dir, "v0.2.0", false)
	if m.PreviousTag != "v0.1.0" {
		t.Fatalf("origin's release: previous_tag %q; want v0.1.0", m.PreviousTag)
	}
	_, err = Verify(ctx, VerifyOptions{Dir: dist, Repo: clone.dir})
	wantIncomplete(t, "verify --repo", err, "shallow clone")

	// The hint's fetch makes the clone whole: the same release.
	clone.git("fetch", "-q", "--tags", "--force", "--unshallow", "origin")
	_, m2 := build(t, clone.dir, "v0.2.0", false)
	if m2.PreviousTag != "v0.1.0" {
		t.Errorf("after the fetch: previous_tag %q; want v0.1.0", m2.PreviousTag)
	}
	if rep, err := Verify(ctx, VerifyOptions{Dir: dist, Repo: clone.dir}); err != nil {
		t.Errorf("verify --repo after the fetch: %v %+v", err, rep)
	}
}

// TestShallowButWhole: a shallow clone whose cut is not in the built
// commit's history (a deep enough fetch) builds.
func TestShallowButWhole(t *testing.T) {
	if _, err := exec.LookPath("bsdtar"); err != nil {
		t.Skip("bsdtar not installed")
	}
	origin, _ := shallowCI(t)
	first := origin.git("rev-list", "--max-parents=0", "HEAD")
	clone := newTestRepo(t)
	clone.git("remote", "add", "origin", "file://"+origin.dir)
	clone.git("fetch", "-q", "--depth=1", "origin", "+refs/heads/main:refs/remotes/origin/main")
	clone.git("fetch", "-q", "--tags", "origin")
	// v0.1.0 is the root commit: fetched whole with its tag, no cut in
	// its history.
	if got := clone.git("rev-parse", "v0.1.0^{commit}"); got != first {
		t.Fatalf("v0.1.0 is %s; want the root %s", got, first)
	}
	if _, err := Build(context.Background(), BuildOptions{Repo: clone.dir, Ref: "v0.1.0", Out: filepath.Join(t.TempDir(), "d")}); err != nil {
		t.Errorf("build of a commit whose history is whole: %v", err)
	}
}
