package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

// TestStrayGoModNotFatal: a file named go.mod that the go command would
// never load — a syntax-highlighting fixture that does not parse, one that
// declares no module — does not stop the release: the SBOM notes it, and
// verify recomputes the same note from the archive. The root go.mod and a
// go.work member must still parse.
func TestStrayGoModNotFatal(t *testing.T) {
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"stray","license":"MIT"}`, 0o644)
	r.write("go.mod", "module example.com/stray\n\ngo 1.22\n", 0o644)
	r.write("tests/syntax/Go/go.mod", "module github.com/x/y\n\nthis is not { go.mod syntax\n", 0o644)
	r.write("docs/go.mod", "// a go.mod that declares nothing\n", 0o644)
	r.commit("feat: one")
	out, _ := build(t, r.dir, "HEAD", false)
	sbom := readSBOMFile(t, out)
	for _, want := range []string{"tests/syntax/Go/go.mod does not parse", "docs/go.mod declares no module"} {
		if !strings.Contains(sbom, want) {
			t.Errorf("SBOM does not note %q", want)
		}
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: out}); err != nil {
		t.Errorf("verify: %v %+v", err, rep.Problems)
	}

	// A go.work member is loaded by the go command: it must parse.
	r.write("go.work", "go 1.22\n\nuse (\n\t.\n\t./docs\n)\n", 0o644)
	r.commit("build: a workspace")
	if _, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "HEAD", Out: filepath.Join(t.TempDir(), "d")}); err == nil {
		t.Error("a go.work member without a module directive built")
	}
}

func readSBOMFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.spdx.json"))
	if err != nil || len(m) != 1 {
		t.Fatalf("SBOM in %s: %v %v", dir, m, err)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	checkSBOM(t, b)
	return string(b)
}

// TestPreviousUntaggedNeverAbove: an untagged build after v2.0.0-beta.21
// of a /v2 module, in a history that also holds v28.2.2 (the +incompatible
// line of the old module path, tagged on a commit of the ancestry), takes
// v2.0.0-beta.21 — never a tag above its own version or of another major
// line. A v1.9.0 tag of the same history (another major line) is not
// taken either.
func TestPreviousUntaggedNeverAbove(t *testing.T) {
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"moby","license":"MIT"}`, 0o644)
	r.commit("feat: old line")
	r.git("tag", "-a", "-m", "v1.9.0", "v1.9.0")
	r.commit("feat: more")
	r.git("tag", "-a", "-m", "v28.2.2", "v28.2.2")
	r.write("go.mod", "module example.com/moby/v2\n\ngo 1.22\n", 0o644)
	beta := r.commit("feat: v2 module")
	r.git("tag", "-a", "-m", "v2.0.0-beta.21", "v2.0.0-beta.21")
	r.commit("fix: after the beta")
	r.commit("fix: again")
	_, m := build(t, r.dir, "HEAD", false)
	if !strings.HasPrefix(m.Version, "2.0.0-beta.21.0.") {
		t.Fatalf("version %s, want 2.0.0-beta.21.0.TIME-HASH", m.Version)
	}
	if m.PreviousTag != "v2.0.0-beta.21" {
		t.Errorf("previous tag %q, want v2.0.0-beta.21 (commit %s)", m.PreviousTag, beta[:12])
	}

	// Without a go.mod (the go command's +incompatible line), the v1 line
	// is not a predecessor of a pseudo-version on v28.
	r2 := newTestRepo(t)
	r2.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"old","license":"MIT"}`, 0o644)
	r2.commit("feat: one")
	r2.git("tag", "-a", "-m", "v28.0.0", "v28.0.0")
	r2.commit("feat: two")
	r2.git("tag", "-a", "-m", "v1.9.9", "v1.9.9") // a stray low tag, nearer
	r2.commit("feat: three")
	_, m2 := build(t, r2.dir, "HEAD", false)
	if m2.PreviousTag != "v28.0.0" {
		t.Errorf("untagged on the v28 line: previous %q, want v28.0.0 (version %s)", m2.PreviousTag, m2.Version)
	}
}

// TestPreviousNearestInAncestry: v3.5.0 cut from main after v3.4.0 was
// branched keeps v3.4.0 as its previous release when v3.4.45 is tagged
// later on the backport branch: the previous release is the nearest
// release tag in the commit's own ancestry, not the highest lower version
// anywhere. And in the ancestry the nearest wins over the highest, as git
// describe picks it: v3.4.9 tagged after v3.5.0 on main precedes v3.6.0.
func TestPreviousNearestInAncestry(t *testing.T) {
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"etcd","license":"MIT"}`, 0o644)
	r.commit("feat: one")
	r.git("tag", "-a", "-m", "v3.4.0", "v3.4.0")
	fork := r.commit("feat: two")
	r.commit("feat: three")
	r.git("tag", "-a", "-m", "v3.5.0", "v3.5.0")
	out, m := build(t, r.dir, "v3.5.0", false)
	if m.PreviousTag != "v3.4.0" {
		t.Fatalf("previous %s, want v3.4.0", m.PreviousTag)
	}
	before, _ := os.ReadFile(filepath.Join(out, NotesName))

	r.git("checkout", "-q", "-b", "release-3.4", fork)
	r.commit("fix: backport")
	r.git("tag", "-a", "-m", "v3.4.45", "v3.4.45")
	out2, m2 := build(t, r.dir, "v3.5.0", false)
	if m2.PreviousTag != "v3.4.0" {
		t.Errorf("after a backport tag: previous %s, want v3.4.0", m2.PreviousTag)
	}
	after, _ := os.ReadFile(filepath.Join(out2, NotesName))
	if string(before) != string(after) {
		t.Errorf("a later backport tag changed v3.5.0's notes:\n%s\n---\n%s", before, after)
	}

	// Nearest, not highest: a lower version tagged nearer in the ancestry
	// (a hotfix tag merged back) is the previous release.
	r.git("checkout", "-q", "main")
	r.commit("feat: four")
	r.git("tag", "-a", "-m", "v3.4.9", "v3.4.9")
	r.commit("feat: five")
	r.git("tag", "-a", "-m", "v3.6.0", "v3.6.0")
	if _, m3 := build(t, r.dir, "v3.6.0", false); m3.PreviousTag != "v3.4.9" {
		t.Errorf("v3.6.0: previous %s, want the nearest, v3.4.9", m3.PreviousTag)
	}
}

// TestVerifyNamesWhatItCannotCheck: without --repo, verify lists per field
// what the files alone cannot prove (the nested module's version, the tag,
// the notes' changes; the licence and supplier when the contract is not in
// the archive) and Strict fails on them; what the files do prove is
// checked: a source purl version edit on a tagged release, and a purl
// module path edit when the archive has a root go.mod, are refused even
// with --contract.
func TestVerifyNamesWhatItCannotCheck(t *testing.T) {
	r := fixtureRepo(t)
	r.git("tag", "-a", "-m", "r", "v1.60.0")
	good, m := build(t, r.dir, "v1.60.0", false)
	rep, err := Verify(context.Background(), VerifyOptions{Dir: good})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	fields := map[string]bool{}
	for _, u := range rep.Unchecked {
		fields[u.Field] = true
	}
	for _, f := range []string{"module example.com/local/lib version", "tag", "changes listed", "commit, tree"} {
		if !fields[f] {
			t.Errorf("unchecked fields %v lack %q", rep.Unchecked, f)
		}
	}
	if fields["source licenseDeclared"] {
		t.Errorf("the licence is checkable from the archive's release.json: %v", rep.Unchecked)
	}
	if _, err := Verify(context.Background(), VerifyOptions{Dir: good, Strict: true}); !errors.Is(err, ErrUnchecked) || exitcode.Of(err) != exitcode.Failed {
		t.Errorf("strict verify without --repo: %v, want ErrUnchecked exit 1", err)
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: good, Repo: r.dir, Strict: true}); err != nil || len(rep.Unchecked) != 0 {
		t.Errorf("strict verify --repo: %v %v", err, rep.Unchecked)
	}

	for name, edit := range map[string]func(*SPDXDocument){
		"purl version": func(d *SPDXDocument) {
			d.Packages[0].ExternalRefs[0].ReferenceLocator = "pkg:golang/example.com/Fixture/app@v1.67.0"
		},
		"purl path": func(d *SPDXDocument) {
			d.Packages[0].ExternalRefs[0].ReferenceLocator = "pkg:golang/example.com/Evil/app@v1.60.0"
		},
	} {
		dir := copyDir(t, good)
		editSBOM(t, dir, m, edit)
		cf := filepath.Join(t.TempDir(), "release.json")
		writeFile(t, cf, []byte(testContract))
		if _, err := Verify(context.Background(), VerifyOptions{Dir: dir, ContractFile: cf}); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s edit passed: %v", name, err)
		}
	}

	// Built under --contract FILE and verified without it: the licence is
	// read from the SBOM, and verify says it did not check it.
	cf := filepath.Join(t.TempDir(), "release.json")
	writeFile(t, cf, []byte(strings.Replace(testContract, `"Apache-2.0 OR MIT"`, `"MIT"`, 1)))
	out := filepath.Join(t.TempDir(), "dist")
	if _, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "v1.60.0", Out: out, ContractFile: cf}); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(context.Background(), VerifyOptions{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range rep.Unchecked {
		found = found || u.Field == "source licenseDeclared"
	}
	if !found {
		t.Errorf("licence of a --contract release not listed as unchecked: %v", rep.Unchecked)
	}
}
