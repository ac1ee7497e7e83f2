package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxRunInits bounds the packages `artexec run` initialises (GODEBUG
// inittrace lines): every one of them is paid at each task start. The
// whole CLI's dependencies are about 50; one more dependency that drags in
// a configuration framework, an HTTP stack or a queue client shows here.
const maxRunInits = 60

// heavy are packages `artexec run` must never initialise: it uses none of
// them.
var heavy = []string{"net/http", "github.com/nats-io/", "github.com/spf13/viper"}

// TestRunInitCost builds artexec, runs `artexec run -- true` with
// GODEBUG=inittrace=1 and counts the packages it initialises. While the
// secret-scanning rules still come from gitleaks's config package (which
// links viper, and viper net/http), the count and the heavy-package check
// apply to what artexec initialises apart from that package's own
// dependency closure (found with go list); once it is gone they apply to
// everything, with no change here.
func TestRunInitCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds artexec")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "artexec")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "--workspace", dir, "--allow", "true", "--", "true")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("artexec run: %v\n%s\n%s", err, out, stderr.String())
	}
	var inits []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inits = append(inits, strings.ReplaceAll(f[1], "%2e", "."))
		}
	}
	if len(inits) == 0 {
		t.Fatalf("no inittrace lines on stderr:\n%s", stderr.String())
	}
	keep := reachableWithout(t, goBin, "github.com/zricethezav/gitleaks/")
	var counted []string
	for _, p := range inits {
		if keep == nil || keep[p] || p == "main" {
			counted = append(counted, p)
		}
	}
	for _, p := range counted {
		for _, h := range heavy {
			if strings.HasPrefix(p, h) {
				t.Errorf("artexec run initialises %s", p)
			}
		}
	}
	if keep != nil {
		t.Logf("gitleaks's config is still linked: %d packages initialised in all, %d of them outside its closure (held to %d)", len(inits), len(counted), maxRunInits)
	}
	if len(counted) > maxRunInits {
		t.Errorf("artexec run initialises %d packages; want at most %d:\n%s", len(counted), maxRunInits, strings.Join(counted, " "))
	}
}

// reachableWithout is the set of packages cmd/artexec imports, directly or
// not, when no edge into a package with prefix skip is followed; nil when
// no such package is linked at all.
func reachableWithout(t *testing.T, goBin, skip string) map[string]bool {
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	linked := false
	var self string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		self = f[0] // go list -deps prints the package itself last
		linked = linked || strings.HasPrefix(f[0], skip)
	}
	if !linked {
		return nil
	}
	seen := map[string]bool{}
	stack := []string{self}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		for _, q := range imports[p] {
			if strings.HasPrefix(q, skip) {
				continue
			}
			if _, ok := imports[q]; !ok {
				q = "vendor/" + q // the standard library's vendored packages
			}
			stack = append(stack, q)
		}
	}
	return seen
}
