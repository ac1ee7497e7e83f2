package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// tarEntry is what the comparison with git archive looks at.
type tarEntry struct {
	Name     string
	Type     byte
	Mode     int64
	Linkname string
	Data     string
	ModTime  int64
}

func readTar(t testing.TB, r io.Reader) []tarEntry {
	t.Helper()
	tr := tar.NewReader(r)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader { // git archive's commit id comment
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h.Name, h.Typeflag, h.Mode, h.Linkname, string(data), h.ModTime.Unix()})
	}
}

func readTarGz(t testing.TB, path string) []tarEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, zr)
}

// gitArchive is `git archive` of a commit with the modes artrelease writes
// (tar.umask=022: files 644/755, directories 755).
func gitArchive(t testing.TB, repo, commit, prefix string) []tarEntry {
	t.Helper()
	cmd := exec.Command("git", "-C", repo, "-c", "tar.umask=022", "archive", "--format=tar", "--prefix="+prefix+"/", commit)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git archive: %v", err)
	}
	entries := readTar(t, bytes.NewReader(out))
	// git archive walks trees in Git order; artrelease sorts by tar name.
	slices.SortFunc(entries, func(a, b tarEntry) int { return strings.Compare(a.Name, b.Name) })
	return entries
}

func TestArchiveMatchesGitArchive(t *testing.T) {
	r := fixtureRepo(t)
	out, m := build(t, r.dir, "HEAD", false)
	a, _ := m.Artifact(ArtifactArchive)
	got := readTarGz(t, filepath.Join(out, a.Name))
	want := gitArchive(t, r.dir, m.Commit, m.Name+"-"+m.Version)
	if len(got) != len(want) {
		t.Fatalf("archive has %d entries, git archive %d:\n got %v\nwant %v", len(got), len(want), names(got), names(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// The order is bytewise on tar names, not Git's tree order.
	if !slices.IsSortedFunc(got, func(a, b tarEntry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("archive names not sorted: %v", names(got))
	}
	// And the things the fixture is there for.
	byName := map[string]tarEntry{}
	for _, e := range got {
		byName[strings.TrimPrefix(e.Name, m.Name+"-"+m.Version+"/")] = e
	}
	for name, check := range map[string]func(tarEntry) bool{
		"bin/tool.sh":      func(e tarEntry) bool { return e.Mode == 0o755 && e.Type == tar.TypeReg },
		"a/b":              func(e tarEntry) bool { return e.Mode == 0o644 },
		"link":             func(e tarEntry) bool { return e.Type == tar.TypeSymlink && e.Linkname == "README.md" },
		"bin/dangling":     func(e tarEntry) bool { return e.Type == tar.TypeSymlink && e.Linkname == "../nowhere/at/all" },
		"README.md":        func(e tarEntry) bool { return e.Data == "hello\r\nworld\n" },
		"a.c":              func(e tarEntry) bool { return e.Data == "" },
		"a/":               func(e tarEntry) bool { return e.Type == tar.TypeDir && e.Mode == 0o755 },
		"ünïcødé/ファイル.txt": func(e tarEntry) bool { return e.Data == "unicode\n" },
		"deep/" + strings.Repeat("n", 120) + ".txt": func(e tarEntry) bool { return e.Data == "long name\n" },
	} {
		e, ok := byName[name]
		if !ok || !check(e) {
			t.Errorf("archive entry %q = %+v (present %v)", name, e, ok)
		}
	}
	mt, _ := time.Parse(time.RFC3339, m.CommitTime)
	for _, e := range got {
		if e.ModTime != mt.Unix() {
			t.Errorf("%s: mtime %d, want the commit time %d", e.Name, e.ModTime, mt.Unix())
		}
	}
}

func names(es []tarEntry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.Name)
	}
	return n
}

// withUmask runs f under a process umask (tests in this package do not run
// in parallel, so nothing else sees it).
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

func TestReproducibleAcrossClonesUmasksAndMtimes(t *testing.T) {
	r := fixtureRepo(t)
	r.git("tag", "-a", "-m", "release 1.0.0", "v1.0.0")
	base := t.TempDir()
	clone := func(name, umask string, bare bool) string {
		dst := filepath.Join(base, name)
		args := "git clone -q --no-hardlinks"
		if bare {
			args += " --bare"
		}
		cmd := exec.Command("sh", "-c", "umask "+umask+" && "+args+` "$0" "$1"`, r.dir, dst)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		return dst
	}
	c1 := clone("one", "077", false)
	c2 := clone("two", "000", false)
	c3 := clone("three.git", "022", true)
	// Different file mtimes in the second clone's worktree.
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	filepath.Walk(c2, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !strings.Contains(p, string(filepath.Separator)+".git") {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	var outs []string
	withUmask(0o077, func() {
		out, _ := build(t, c1, "v1.0.0", true)
		outs = append(outs, out)
	})
	withUmask(0o002, func() {
		out, _ := build(t, c2, "v1.0.0", true)
		outs = append(outs, out)
		// HEAD of a clone is the tagged commit: the same release.
		out, _ = build(t, c3, "HEAD", true)
		outs = append(outs, out)
	})
	first := readDir(t, outs[0])
	if len(first) != 6 {
		t.Fatalf("release has files %v, want 6", keys(first))
	}
	for _, out := range outs[1:] {
		other := readDir(t, out)
		if !slices.Equal(keys(first), keys(other)) {
			t.Fatalf("file sets differ: %v vs %v", keys(first), keys(other))
		}
		for name, b := range first {
			if !bytes.Equal(b, other[name]) {
				t.Errorf("%s differs between %s and %s", name, outs[0], out)
			}
		}
	}
	for _, name := range keys(first) {
		fi, err := os.Stat(filepath.Join(outs[0], name))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v under umask 077, want 0644", name, fi.Mode())
		}
	}
}

func keys(m map[string][]byte) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func TestDirtyWorktreeAndUntrackedFilesExcluded(t *testing.T) {
	r := fixtureRepo(t)
	clean, m := build(t, r.dir, "HEAD", false)
	// Change everything the worktree and index can change.
	r.write("README.md", "uncommitted edit\n", 0o644)
	r.write("docs/guide.md", "staged edit\n", 0o644)
	r.git("add", "docs/guide.md")
	r.write("untracked.txt", "never released\n", 0o644)
	r.write("bin/new-untracked.sh", "#!/bin/sh\n", 0o755)
	os.Remove(filepath.Join(r.dir, "a.c"))
	os.Chmod(filepath.Join(r.dir, "bin", "tool.sh"), 0o644)
	dirty, m2 := build(t, r.dir, "HEAD", false)
	if m.Commit != m2.Commit {
		t.Fatalf("commit changed: %s vs %s", m.Commit, m2.Commit)
	}
	a, b := readDir(t, clean), readDir(t, dirty)
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s changed with a dirty worktree", name)
		}
	}
	arch, _ := m2.Artifact(ArtifactArchive)
	for _, e := range readTarGz(t, filepath.Join(dirty, arch.Name)) {
		if strings.Contains(e.Name, "untracked") {
			t.Errorf("untracked file %s reached the archive", e.Name)
		}
		if strings.HasSuffix(e.Name, "/README.md") && e.Data != "hello\r\nworld\n" {
			t.Errorf("README.md = %q: the worktree leaked in", e.Data)
		}
	}
}

func TestBuildOutputDirectory(t *testing.T) {
	r := fixtureRepo(t)
	ctx := context.Background()
	parent := t.TempDir()
	out := filepath.Join(parent, "dist")

	// A non-empty directory is refused, untouched, without --force.
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "keep"), []byte("mine"), 0o644)
	_, err := Build(ctx, BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out})
	if !errors.Is(err, ErrOutExists) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("Build into non-empty dir: err %v (exit %d), want ErrOutExists (3)", err, exitcode.Of(err))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "keep")); string(b) != "mine" {
		t.Fatal("the refused directory was changed")
	}

	// --force replaces it whole.
	if _, err := Build(ctx, BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "keep")); !errors.Is(err, os.ErrNotExist) {
		t.Error("--force kept a file of the old directory")
	}
	if _, err := Verify(ctx, VerifyOptions{Dir: out}); err != nil {
		t.Errorf("forced build does not verify: %v", err)
	}

	// A failed build leaves nothing: no out, no temporary directory.
	out2 := filepath.Join(parent, "dist2")
	_, err = Build(ctx, BuildOptions{Repo: r.dir, Ref: "no-such-ref", Out: out2})
	if !errors.Is(err, ErrNotFound) || exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("unknown ref: err %v, want not found (4)", err)
	}
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"x","license":"Apache-2.0","artifcts":[]}`, 0o644)
	r.commit("chore: break the contract")
	_, err = Build(ctx, BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out2})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "contract.artifcts: unknown field") {
		t.Fatalf("bad contract: err %v, want exit 2 naming contract.artifcts", err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "dist" {
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		t.Errorf("after failed builds the parent holds %v, want only dist", n)
	}
	// An empty existing directory is fine.
	os.Mkdir(out2, 0o755)
	if _, err := Build(ctx, BuildOptions{Repo: r.dir, Ref: "HEAD~1", Out: out2}); err != nil {
		t.Fatalf("build into an empty directory: %v", err)
	}
}

func TestContractFromTreeNotWorktree(t *testing.T) {
	r := fixtureRepo(t)
	// The worktree's release.json is broken, the committed one is fine.
	r.write("release.json", "{not json", 0o644)
	_, m := build(t, r.dir, "HEAD", false)
	if m.Name != "fixture" {
		t.Fatalf("name %q", m.Name)
	}
	// A missing contract is not found (4), with a hint.
	r2 := newTestRepo(t)
	r2.write("x", "x", 0o644)
	r2.commit("x")
	_, err := Build(context.Background(), BuildOptions{Repo: r2.dir, Ref: "HEAD", Out: filepath.Join(t.TempDir(), "o")})
	var h interface{ Hint() string }
	if exitcode.Of(err) != exitcode.NotFound || !errors.As(err, &h) {
		t.Fatalf("no contract: err %v (exit %d), want 4 with a hint", err, exitcode.Of(err))
	}
	// --contract overrides it from a file.
	cf := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(cf, []byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"other","license":"MIT","artifacts":["archive"]}`), 0o644)
	out := filepath.Join(t.TempDir(), "o")
	m2, err := Build(context.Background(), BuildOptions{Repo: r2.dir, Ref: "HEAD", Out: out, ContractFile: cf})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Name != "other" || len(m2.Artifacts) != 1 {
		t.Errorf("manifest %+v", m2)
	}
}

func TestModuleMustMatchGoMod(t *testing.T) {
	r := fixtureRepo(t)
	r.write("release.json", strings.Replace(testContract, "example.com/Fixture/app", "example.com/fixture/app", 1), 0o644)
	r.commit("chore: wrong module case")
	_, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "HEAD", Out: filepath.Join(t.TempDir(), "o")})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "contract.module") {
		t.Fatalf("err %v, want exit 2 on contract.module", err)
	}
}

func TestSubmodules(t *testing.T) {
	r := fixtureRepo(t)
	// A gitlink entry, written with plumbing: no second repository needed.
	r.git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",vendor/sub")
	r.tick++
	r.git("commit", "-q", "-m", "chore: add a submodule")
	_, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "HEAD", Out: filepath.Join(t.TempDir(), "o")})
	if !errors.Is(err, ErrSubmodule) || exitcode.Of(err) != exitcode.Refused || !strings.Contains(err.Error(), "vendor/sub") {
		t.Fatalf("err %v, want the submodule refused (126) by path", err)
	}
	r.write("release.json", strings.Replace(testContract, `"notes"`, `"submodules": "omit", "notes"`, 1), 0o644)
	r.git("add", "release.json")
	r.tick++
	r.git("commit", "-q", "-m", "chore: omit submodules")
	out, m := build(t, r.dir, "HEAD", false)
	if !slices.Equal(m.OmittedSubmodules, []string{"vendor/sub"}) {
		t.Errorf("omitted %v", m.OmittedSubmodules)
	}
	a, _ := m.Artifact(ArtifactArchive)
	for _, e := range readTarGz(t, filepath.Join(out, a.Name)) {
		if strings.Contains(e.Name, "vendor/sub") {
			t.Errorf("omitted submodule in the archive: %s", e.Name)
		}
	}
	if _, err := Verify(context.Background(), VerifyOptions{Dir: out, Repo: r.dir}); err != nil {
		t.Error(err)
	}
}

func TestCheck(t *testing.T) {
	r := fixtureRepo(t)
	before := r.git("status", "--porcelain", "--ignored")
	rep, err := Check(context.Background(), CheckOptions{Repo: r.dir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reproducible || len(rep.Artifacts) != 4 || len(rep.Differ) != 0 {
		t.Errorf("report %+v", rep)
	}
	if after := r.git("status", "--porcelain", "--ignored"); after != before {
		t.Errorf("check changed the repository: %q → %q", before, after)
	}
}

// interrupted is a cancellation cause with the exit code of a signal, like
// the CLI's.
type interrupted struct{}

func (interrupted) Error() string { return "interrupted" }
func (interrupted) ExitCode() int { return exitcode.Cancelled }

func TestBuildCancelledLeavesNothing(t *testing.T) {
	r := fixtureRepo(t)
	parent := t.TempDir()
	out := filepath.Join(parent, "dist")
	// Cancel from the progress callback: after the build has started its
	// git processes and created its temporary directory.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	steps := 0
	_, err := Build(ctx, BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out, Progress: func(string, ...any) {
		if steps++; steps == 2 {
			cancel(interrupted{})
		}
	}})
	if exitcode.Of(err) != exitcode.Cancelled {
		t.Fatalf("cancelled build: %v (exit %d), want 130", err, exitcode.Of(err))
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a cancelled build left %v", entries)
	}
}
