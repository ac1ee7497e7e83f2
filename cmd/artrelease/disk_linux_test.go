package main

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestUnwritable builds releases onto a tmpfs that is full (every page
// taken by ballast) or read-only, and proves that a build into a new
// directory and a --force rebuild over an existing release both exit 125
// with one line naming the output directory and the cause; that nothing
// under the tmpfs changed (no half-written release, no temporary directory
// left beside it, the old release intact and still verifying); and that
// both builds succeed once space returns or the filesystem is writable
// again, byte-identical to the release built before. Root only (it
// mounts); skipped otherwise.
func TestUnwritable(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	for _, f := range systest.Faults {
		t.Run(f.Name, func(t *testing.T) { testUnwritable(t, f) })
	}
}

func testUnwritable(t *testing.T, fault systest.Fault) {
	m := systest.MountTmpfs(t, 256<<10)
	// Git isolated from the machine, with fixed identity and times (as in
	// TestScripts).
	work := t.TempDir()
	env := append(os.Environ(),
		"HOME="+work, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=C O Mitter", "GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=@1767366245 +0000", "GIT_COMMITTER_DATE=@1767366245 +0000",
		"GORACE="+systest.NoExitSleep())
	run := func(name string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	must := func(name string, args ...string) {
		t.Helper()
		if code, out := run(name, args...); code != 0 {
			t.Fatalf("%s %s: exit %d: %s", name, strings.Join(args, " "), code, out)
		}
	}
	// A repository whose archive takes ~64 KiB (random bytes do not
	// compress): one release fits on the 256 KiB tmpfs, none fits once
	// it is full.
	repo := filepath.Join(work, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"release.json": []byte(`{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "demo", "license": "MIT"}` + "\n"),
		"noise.bin":    make([]byte, 64<<10),
	}
	rand.Read(files["noise.bin"])
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(repo, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("git", "-C", "repo", "init", "-q", "-b", "main")
	must("git", "-C", "repo", "add", "-A")
	must("git", "-C", "repo", "commit", "-q", "-m", "feat: first")

	dist, fresh := m.Path("dist"), m.Path("fresh")
	must("artrelease", "build", "--ref", "HEAD", "--repo", "repo", "--out", dist)
	released := systest.Tree(t, dist)

	fault.Break(m)
	before := systest.Tree(t, m.Dir)
	for _, args := range [][]string{
		{"build", "--ref", "HEAD", "--repo", "repo", "--out", fresh},
		{"build", "--ref", "HEAD", "--repo", "repo", "--out", dist, "--force"},
		{"build", "--ref", "HEAD", "--repo", "repo", "--out", dist, "--force", "--provenance"},
	} {
		out := args[6]
		code, stderr := run("artrelease", args...)
		if code != 125 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "artrelease: error: output directory "+out+": ") ||
			!strings.Contains(stderr, fault.Cause) {
			t.Errorf("artrelease %s: exit %d, %q; want 125 and one line naming %s and %q",
				strings.Join(args, " "), code, stderr, out, fault.Cause)
		}
		systest.SameTree(t, "artrelease "+strings.Join(args, " "), m.Dir, before)
	}
	must("artrelease", "verify", dist)

	fault.Mend(m)
	must("artrelease", "build", "--ref", "HEAD", "--repo", "repo", "--out", fresh)
	must("artrelease", "build", "--ref", "HEAD", "--repo", "repo", "--out", dist, "--force")
	must("artrelease", "verify", dist)
	if got := systest.Tree(t, dist); got != released {
		t.Errorf("the release rebuilt after the fault differs from the one before:\n%s\nwant:\n%s", got, released)
	}
	if got := systest.Tree(t, fresh); got != released {
		t.Errorf("the new release differs from the one before:\n%s\nwant:\n%s", got, released)
	}
	entries, _ := os.ReadDir(m.Dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "dist fresh" {
		t.Errorf("the tmpfs holds %s; want only the releases (no temporary directory left)", got)
	}
}
