// Command checkpin refuses a drifted or unusable linter pin. CI tools are
// pinned in one place, .ci/tools.pin, which the Makefile includes and
// .ci/run sources. checkpin fails (exit 1) when:
//
//   - the pin file is missing or malformed;
//   - the Makefile or .ci/run does not read it, or any of Makefile,
//     .ci/run, scripts/*.sh and .github/workflows/* names a staticcheck
//     version of its own (a second place to change is how pins drift);
//   - go.mod requires honnef.co/go/tools at another version;
//   - the staticcheck the Makefile runs (go run …/staticcheck@PIN, with
//     GOTOOLCHAIN=local) does not report the pinned version;
//   - that staticcheck cannot load this Go toolchain's export data: it is
//     run on a tiny package with a known finding (SA4017) and must report
//     exactly that — an "unsupported version", "module requires go" or
//     import failure means the pin is too old (or too new) for this Go.
//
// Run it from the repository root: go run ./internal/tools/checkpin
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
)

const (
	pinFile       = ".ci/tools.pin"
	pinKey        = "STATICCHECK_VERSION"
	staticcheck   = "honnef.co/go/tools/cmd/staticcheck"
	staticModule  = "honnef.co/go/tools"
	knownFinding  = "SA4017"
	probeTimeout  = 8 * time.Minute
	probeMainFile = `package main

import "strings"

func main() {
	strings.ToUpper("checkpin") // SA4017: the result is discarded
}
`
)

func main() {
	if err := run(context.Background(), "."); err != nil {
		fmt.Fprintf(os.Stderr, "checkpin: error: %v\n", err)
		var h hinted
		if errors.As(err, &h) {
			fmt.Fprintf(os.Stderr, "checkpin: hint: %s\n", h.hint)
		}
		os.Exit(1)
	}
}

type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() }
func (h hinted) Unwrap() error { return h.err }

func run(ctx context.Context, root string) error {
	pins, err := readPins(filepath.Join(root, pinFile))
	if err != nil {
		return err
	}
	version := pins[pinKey]
	if err := checkReaders(root); err != nil {
		return err
	}
	if err := checkDrift(root, version); err != nil {
		return err
	}
	goVersion, err := output(ctx, root, "go", "env", "GOVERSION")
	if err != nil {
		return err
	}
	goVersion = strings.TrimSpace(goVersion)
	out, err := output(ctx, root, "go", "run", staticcheck+"@"+version, "-version")
	if err != nil {
		return classify(version, goVersion, out, err)
	}
	if !reportsVersion(out, version) {
		return fmt.Errorf("staticcheck@%s reports %q, not version %s", version, strings.TrimSpace(out), version)
	}
	if err := probe(ctx, version, goVersion); err != nil {
		return err
	}
	fmt.Printf("checkpin: %s=%s (%s) builds with and analyses %s\n", pinKey, version, firstLines(out, 1), goVersion)
	return nil
}

// reportsVersion reads `staticcheck -version` output such as
// "staticcheck 2026.2.2 (0.8.2)" (older releases print "(v0.6.1)").
func reportsVersion(out, version string) bool {
	return strings.Contains(out, "("+version+")") || strings.Contains(out, "("+strings.TrimPrefix(version, "v")+")")
}

var pinLineRE = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)$`)

// readPins parses KEY=vX.Y.Z lines (comments and blank lines allowed):
// a format both make's include and the shell's source read the same way.
func readPins(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pin file: %w", err)
	}
	pins := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := pinLineRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: want KEY=vX.Y.Z, got %q", path, i+1, line)
		}
		if _, dup := pins[m[1]]; dup {
			return nil, fmt.Errorf("%s:%d: %s pinned twice", path, i+1, m[1])
		}
		pins[m[1]] = m[2]
	}
	if pins[pinKey] == "" {
		return nil, fmt.Errorf("%s: no %s", path, pinKey)
	}
	return pins, nil
}

// checkReaders requires the Makefile and .ci/run to read the pin file.
func checkReaders(root string) error {
	for _, r := range []struct {
		file string
		re   *regexp.Regexp
		how  string
	}{
		{"Makefile", regexp.MustCompile(`(?m)^-?include\s+\.ci/tools\.pin\s*$`), "include .ci/tools.pin"},
		{".ci/run", regexp.MustCompile(`(?m)^\s*(\.|source)\s+\.ci/tools\.pin\s*$`), ". .ci/tools.pin"},
	} {
		data, err := os.ReadFile(filepath.Join(root, r.file))
		if err != nil {
			return fmt.Errorf("%s: %w", r.file, err)
		}
		if !r.re.Match(data) {
			return hinted{fmt.Errorf("%s does not read %s", r.file, pinFile), "add the line: " + r.how}
		}
	}
	return nil
}

// staticcheckRefRE finds "…/cmd/staticcheck@X" and "honnef.co/go/tools@X".
var staticcheckRefRE = regexp.MustCompile(`honnef\.co/go/tools(?:/cmd/staticcheck)?@(\$\([A-Za-z_]+\)|\$\{[A-Za-z_]+\}|[^\s"'\x60)]+)`)

// drift lists places in data that name a staticcheck version other than a
// reference to the pin variable.
func drift(data []byte) []string {
	var bad []string
	for _, m := range staticcheckRefRE.FindAllSubmatch(data, -1) {
		v := string(m[1])
		switch v {
		case "$(" + pinKey + ")", "${" + pinKey + "}", "$" + pinKey:
			continue
		}
		bad = append(bad, v)
	}
	return bad
}

func checkDrift(root, version string) error {
	files := []string{"Makefile", ".ci/run"}
	for _, pattern := range []string{"scripts/*.sh", ".github/workflows/*.yml", ".github/workflows/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		if bad := drift(data); len(bad) > 0 {
			return hinted{fmt.Errorf("%s names staticcheck@%s; the pin is %s=%s", f, strings.Join(bad, ", @"), pinKey, version),
				"use $(" + pinKey + ") (make) or ${" + pinKey + "} (shell) and change the version only in " + pinFile}
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return fmt.Errorf("go.mod: %w", err)
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return fmt.Errorf("go.mod: %w", err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == staticModule && r.Mod.Version != version {
			return hinted{fmt.Errorf("go.mod requires %s %s; the pin is %s", staticModule, r.Mod.Version, version),
				"keep the two equal, or drop the requirement"}
		}
	}
	return nil
}

// probe runs the pinned staticcheck on a one-file module declaring this
// toolchain's Go version, and requires the known finding.
func probe(ctx context.Context, version, goVersion string) error {
	dir, err := os.MkdirTemp("", "checkpin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gomod := "module checkpin.example/probe\n\ngo " + strings.TrimPrefix(goVersion, "go") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(probeMainFile), 0o644); err != nil {
		return err
	}
	out, err := output(ctx, dir, "go", "run", staticcheck+"@"+version, "-checks", knownFinding, "./...")
	return judgeProbe(version, goVersion, out, err)
}

// judgeProbe decides from the probe's output: staticcheck exits 1 with the
// finding when it could analyse the package.
func judgeProbe(version, goVersion, out string, err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && strings.Contains(out, knownFinding) && !unreadable(out) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("staticcheck@%s found nothing in a package with a known %s finding: it is not analysing %s code", version, knownFinding, goVersion)
	}
	return classify(version, goVersion, out, err)
}

var unreadableRE = regexp.MustCompile(`(?i)unsupported version|module requires go|requires go >=|go version .* (is )?newer|could not import|export data|internal error|invalid package name`)

func unreadable(out string) bool { return unreadableRE.MatchString(out) }

// buildFailedRE is the go command's header for a package that did not
// compile: the pinned staticcheck (or a dependency, such as an old
// golang.org/x/tools) does not build with this Go.
var buildFailedRE = regexp.MustCompile(`(?m)^# \S+`)

// classify turns a staticcheck failure into a message that says whether
// the pin cannot be built with, or cannot read, this toolchain.
func classify(version, goVersion, out string, err error) error {
	hint := "pin a staticcheck release that supports " + goVersion + " in " + pinFile + " (or use the Go it supports)"
	switch {
	case buildFailedRE.MatchString(out):
		return hinted{fmt.Errorf("staticcheck@%s does not build with %s: %s", version, goVersion, firstLines(out, 3)), hint}
	case unreadable(out):
		return hinted{fmt.Errorf("staticcheck@%s cannot read %s: %s", version, goVersion, firstLines(out, 3)), hint}
	}
	return fmt.Errorf("staticcheck@%s: %v: %s", version, err, firstLines(out, 3))
}

// firstLines joins the first n lines that say something (the go command's
// "downloading" chatter does not).
func firstLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "go: downloading ") {
			continue
		}
		if keep = append(keep, l); len(keep) == n {
			break
		}
	}
	return strings.Join(keep, " / ")
}

// output runs a command with GOTOOLCHAIN=local (the go command must not
// fetch another toolchain behind the check's back) and returns its combined
// output.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}
