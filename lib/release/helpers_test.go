package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain isolates git from the machine: a temporary HOME (no global
// config, no signing keys, no credential helpers), no system config, a
// fixed identity, and then checks that no cat-file reader goroutine leaked.
func TestMain(m *testing.M) {
	// The go command's caches stay the machine's (the binary tests build
	// with them, as a release build does): they are found from the real
	// HOME, before it is replaced.
	if out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output(); err == nil {
		if v := strings.Fields(string(out)); len(v) == 2 {
			os.Setenv("GOCACHE", v[0])
			os.Setenv("GOMODCACHE", v[1])
		}
	}
	home, err := os.MkdirTemp("", "release-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "A U Thor",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "C O Mitter",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"TZ":                  "Asia/Kolkata", // times must not depend on the zone
	} {
		os.Setenv(k, v)
	}
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(home)
	os.Exit(code)
}

// testRepo is a real Git repository in a temporary directory, with commits
// at fixed, increasing times.
type testRepo struct {
	t    testing.TB
	dir  string
	tick int
}

const baseTime = 1767366245 // 2026-01-02T15:04:05Z

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	r := &testRepo{t: t, dir: filepath.Join(t.TempDir(), "repo")}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q", "-b", "main")
	r.git("config", "commit.gpgsign", "false")
	r.git("config", "tag.gpgsign", "false")
	return r
}

// git runs git in the repository with the next commit time and returns
// trimmed stdout.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	out, err := r.gitErr(args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (r *testRepo) gitErr(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	date := fmt.Sprintf("@%d +0000", baseTime+60*r.tick)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (r *testRepo) write(path, content string, mode os.FileMode) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) symlink(path, target string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatal(err)
	}
}

// commit stages everything and commits at the next tick; returns the id.
func (r *testRepo) commit(msg string) string {
	r.t.Helper()
	r.tick++
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

const testContract = `{
  "apiVersion": "art/v1alpha1",
  "kind": "ReleaseContract",
  "name": "fixture",
  "module": "example.com/Fixture/app",
  "license": "Apache-2.0 OR MIT",
  "notes": {"changelog": "CHANGELOG.md"}
}
`

// fixtureRepo is a repository exercising every path and mode the archive
// must carry: executables, symlinks, nested and sibling directories whose
// tar order differs from Git's tree order, long and non-ASCII names, empty
// and binary files, a go.mod with replace directives and indirect modules.
func fixtureRepo(t testing.TB) *testRepo {
	t.Helper()
	r := newTestRepo(t)
	gomod, err := os.ReadFile(filepath.Join(testdataDir(), "fixture", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(testdataDir(), "fixture", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	r.write("release.json", testContract, 0o644)
	r.write("go.mod", string(gomod), 0o644)
	r.write("go.sum", string(gosum), 0o644)
	r.write("CHANGELOG.md", "# Changelog\n", 0o644)
	r.write("README.md", "hello\r\nworld\n", 0o644)
	r.commit("Initial import")
	r.write("bin/tool.sh", "#!/bin/sh\necho tool\n", 0o755)
	r.write("lib/x.go", "package lib\n", 0o644)
	// go.mod replaces example.com/local/lib by ./lib: a nested module of
	// the tree with its own requirement.
	r.write("lib/go.mod", "module example.com/local/lib\n\ngo 1.22\n\nrequire golang.org/x/text v0.14.0\n", 0o644)
	r.write("lib/go.sum", "golang.org/x/text v0.14.0 h1:z3R8QgsVabzxZ3+/cW3dRrB09zQmQcwPUHCmvk9g8o4=\n", 0o644)
	r.symlink("link", "README.md")
	r.symlink("bin/dangling", "../nowhere/at/all")
	r.commit("feat(bin): add the tool")
	r.write("a-b", "dash\n", 0o644)
	r.write("a/b", "slash\n", 0o600) // group/other bits are not Git's to keep
	r.write("a.c", "", 0o644)
	r.write("deep/"+strings.Repeat("d", 60)+"/"+strings.Repeat("e", 60)+"/file.txt", "long path\n", 0o644)
	r.write("deep/"+strings.Repeat("n", 120)+".txt", "long name\n", 0o644)
	r.write("ünïcødé/ファイル.txt", "unicode\n", 0o644)
	r.write("bin/blob.bin", string([]byte{0, 1, 2, 255, 254, '\n', 0}), 0o644)
	r.commit("fix: sort tar names bytewise\n\nBREAKING CHANGE: archive order differs")
	r.write("docs/guide.md", "guide\n", 0o644)
	r.commit("docs: a guide")
	return r
}

func testdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "release")
}

// build builds ref of repo into a new directory and returns it.
func build(t testing.TB, repo, ref string, provenance bool) (string, *Manifest) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dist")
	m, err := Build(context.Background(), BuildOptions{Repo: repo, Ref: ref, Out: out, Provenance: provenance})
	if err != nil {
		t.Fatalf("Build(%s, %s): %v", repo, ref, err)
	}
	a, _ := m.Artifact(ArtifactArchive)
	extractEverywhere(t, filepath.Join(out, a.Name))
	return out, m
}

// readDir maps each file name in dir to its bytes.
func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}
