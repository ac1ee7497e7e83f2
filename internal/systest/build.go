package systest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built caches, per test, the binaries GoBuild and GoTest made for it: a
// test that starts one binary many times builds it once.
var built sync.Map // buildKey -> string

type buildKey struct {
	t    testing.TB
	args string
}

// GoBuild builds the main package pkg (an import path or a path relative
// to the calling test's directory) with the given build tags into the
// test's temporary directory and returns the binary's path. It builds with
// -race when the test binary itself was (so the race-built dependencies in
// the build cache are reused and the child is checked too). A test uses
// it for a variant the test binary cannot be, such as an artq built with
// -tags failpoint.
func GoBuild(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	return goBuild(t, []string{"build"}, pkg, tags)
}

// GoTest is GoBuild for pkg's test binary (go test -c): a test that
// re-executes its own test binary as a child uses it when the child must
// be built with tags the parent was not.
func GoTest(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	return goBuild(t, []string{"test", "-c"}, pkg, tags)
}

func goBuild(t testing.TB, verb []string, pkg string, tags []string) string {
	t.Helper()
	args := append([]string{}, verb...)
	if Race {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	key := buildKey{t, strings.Join(append(args, pkg), " ")}
	if p, ok := built.Load(key); ok {
		return p.(string)
	}
	name := filepath.Base(pkg)
	if name == "." || name == ".." {
		name = "prog"
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", append(args, "-o", out, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	built.Store(key, out)
	t.Cleanup(func() { built.Delete(key) })
	return out
}

// GoEnv is the go command's setting key (GOCACHE, GOPATH, ...): the
// environment's value if set, else what `go env` reports, for a test that
// runs the go command in an environment of its own.
func GoEnv(t testing.TB, key string) string {
	t.Helper()
	if v := os.Getenv(key); v != "" {
		return v
	}
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}
