package docstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestDepsDocumented: docs/deps.md is true and complete. Every module
// go.mod requires directly has a row; every row names a module go.mod
// requires (or the bench-only module); and a row that calls its module
// test-only (or generate- and test-time only) names one that no binary
// links.
func TestDepsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{}
	for _, r := range mf.Require {
		required[r.Mod.Path] = true
	}
	row := regexp.MustCompile("^\\| `([^`]+)`[^|]*\\| (.*)\\|$")
	rows := map[string]string{}
	for i, l := range strings.Split(readDoc(t, "docs/deps.md"), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		mod := strings.TrimSuffix(m[1], "/testscript")
		mod = strings.TrimSuffix(mod, "/unix")
		if strings.HasPrefix(mod, "scripts/") {
			continue // a module of its own, bench-only
		}
		if !required[mod] {
			t.Errorf("docs/deps.md:%d: %s is not required by go.mod", i+1, mod)
		}
		rows[mod] = m[2]
	}
	for _, r := range mf.Require {
		if !r.Indirect && rows[r.Mod.Path] == "" {
			t.Errorf("go.mod requires %s directly, but docs/deps.md has no row for it", r.Mod.Path)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./cmd/...")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linked := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		linked[m] = true
	}
	if !linked["github.com/alecthomas/kong"] {
		t.Fatal("go list: no binary links kong; the check below could not fail")
	}
	for mod, why := range rows {
		testOnly := strings.HasPrefix(why, "test-only") || strings.HasPrefix(why, "generate- and test-time only")
		if testOnly && linked[mod] {
			t.Errorf("docs/deps.md calls %s test-only, but a binary links it (go list -deps ./cmd/...)", mod)
		}
	}
}
