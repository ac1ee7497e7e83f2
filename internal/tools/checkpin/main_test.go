package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPins(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pin")
	for _, tc := range []struct {
		text, want string // want: error substring, or "" for success
	}{
		{"# c\nSTATICCHECK_VERSION=v0.8.2\n", ""},
		{"STATICCHECK_VERSION=v0.8.2\nOTHER=v1.0.0-rc.1\n", ""},
		{"STATICCHECK_VERSION = v0.8.2\n", "want KEY=vX.Y.Z"},
		{"STATICCHECK_VERSION=latest\n", "want KEY=vX.Y.Z"},
		{"STATICCHECK_VERSION=v0.8.2\nSTATICCHECK_VERSION=v0.8.1\n", "pinned twice"},
		{"OTHER=v1.0.0\n", "no STATICCHECK_VERSION"},
	} {
		os.WriteFile(p, []byte(tc.text), 0o644)
		_, err := readPins(p)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readPins(%q) = %v; want %q", tc.text, err, tc.want)
		}
	}
}

func TestDrift(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  []string
	}{
		{"STATICCHECK := go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)", nil},
		{`go run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" ./...`, nil},
		{"go run honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION ./...", nil},
		{"go run honnef.co/go/tools/cmd/staticcheck@v0.8.1 ./...", []string{"v0.8.1"}},
		{"go install honnef.co/go/tools/cmd/staticcheck@latest", []string{"latest"}},
		{"go get honnef.co/go/tools@v0.7.0", []string{"v0.7.0"}},
		{"uses: dominikh/staticcheck-action@v1 # not the module", nil},
	} {
		got := drift([]byte(tc.text))
		if strings.Join(got, ",") != strings.Join(tc.bad, ",") {
			t.Errorf("drift(%q) = %v; want %v", tc.text, got, tc.bad)
		}
	}
}

// TestCheckRepository runs the file checks on a copy of a repository
// layout: the real one passes, each kind of drift fails.
func TestCheckRepository(t *testing.T) {
	write := func(dir, name, text string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
	}
	layout := func() string {
		dir := t.TempDir()
		write(dir, ".ci/tools.pin", "STATICCHECK_VERSION=v0.8.2\n")
		write(dir, "Makefile", "include .ci/tools.pin\nlint:\n\tgo run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...\n")
		write(dir, ".ci/run", "#!/bin/sh\n. .ci/tools.pin\necho ${STATICCHECK_VERSION}\n")
		write(dir, "go.mod", "module x\n\ngo 1.22\n")
		return dir
	}
	check := func(dir string) error {
		if err := checkReaders(dir); err != nil {
			return err
		}
		return checkDrift(dir, "v0.8.2")
	}
	if err := check(layout()); err != nil {
		t.Fatalf("clean layout: %v", err)
	}
	for name, damage := range map[string]func(dir string){
		"Makefile without include": func(d string) { write(d, "Makefile", "lint:\n\tstaticcheck ./...\n") },
		".ci/run without source":   func(d string) { write(d, ".ci/run", "#!/bin/sh\nmake test\n") },
		"script with its own pin": func(d string) {
			write(d, "scripts/lint.sh", "go run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...\n")
		},
		"workflow with its own pin": func(d string) {
			write(d, ".github/workflows/ci.yml", "run: go run honnef.co/go/tools/cmd/staticcheck@2025.1 ./...\n")
		},
		"go.mod at another version": func(d string) {
			write(d, "go.mod", "module x\n\ngo 1.22\n\nrequire honnef.co/go/tools v0.7.0\n")
		},
	} {
		dir := layout()
		damage(dir)
		if err := check(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The repository's own files pass.
	if err := check(filepath.Join("..", "..", "..")); err != nil {
		t.Errorf("this repository: %v", err)
	}
}

func TestJudgeProbe(t *testing.T) {
	exit1 := exitError(t, 1)
	exit2 := exitError(t, 2)
	for _, tc := range []struct {
		name string
		out  string
		err  error
		want string // "" = accepted
	}{
		{"finding reported", "main.go:6:2: strings.ToUpper doesn't have side effects (SA4017)\n", exit1, ""},
		{"nothing found", "", nil, "found nothing"},
		{"old export data", "-: could not import strings (unsupported version: 2)\n", exit1, "cannot read"},
		{"module requires newer go", "go: honnef.co/go/tools@v0.9.0 requires go >= 1.27 (running go 1.26.8; GOTOOLCHAIN=local)\n", exit1, "cannot read"},
		{"tool does not build", "go: downloading x\n# golang.org/x/tools/internal/tokeninternal\ntokeninternal.go:64:9: invalid array length\n", exit1, "does not build with go1.26.8: # golang.org/x/tools/internal/tokeninternal"},
		{"other failure", "flag provided but not defined: -checks\n", exit2, "exit status 2"},
	} {
		err := judgeProbe("v0.8.2", "go1.26.8", tc.out, tc.err)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: judgeProbe = %v; want %q", tc.name, err, tc.want)
		}
	}
}

func TestReportsVersion(t *testing.T) {
	if !reportsVersion("staticcheck 2026.2.2 (0.8.2)\n", "v0.8.2") || !reportsVersion("staticcheck 2025.1 (v0.6.0)", "v0.6.0") {
		t.Error("real -version outputs not recognised")
	}
	if reportsVersion("staticcheck 2026.2.2 (0.8.20)\n", "v0.8.2") || reportsVersion("staticcheck (devel)", "v0.8.2") {
		t.Error("another version accepted")
	}
}

// exitError makes a real *exec.ExitError with the given status.
func exitError(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+string(rune('0'+code))).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("no exit error: %v", err)
	}
	return err
}
