package release

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/art-runtime/art/lib/jsonx"
)

// DefaultPlatforms are the platforms a started contract builds for.
var DefaultPlatforms = []string{"darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"}

// initNotes are the "//" lines of a started contract: JSON has no
// comments, so the contract takes a "//" member, a list of strings that
// artrelease ignores (Contract.Comment).
var initNotes = []string{
	"Started by artrelease init: edit, commit as release.json, then run artrelease check.",
	"Fields: docs/artrelease.md of github.com/art-runtime/art (the contract). This \"//\" member is ignored.",
	"license: an SPDX expression; LicenseRef-unknown means none was detected in LICENSE: set the real one.",
	"binaries: one per package main found under cmd/; platforms are GOOS/GOARCH.",
	"toolchain: the Go that must build the binaries (another is refused; GOTOOLCHAIN can fetch it).",
}

// InitContract writes the starting ReleaseContract for the repository in
// dir, read from its files (a worktree: init runs before anything is
// committed): the module path of go.mod, the package main directories
// under cmd/, the licence of LICENSE (licenses.go's rule), the go command's
// toolchain, LICENSE and README as archive files, checksums.txt. The
// result decodes as a contract.
func InitContract(dir string) ([]byte, error) {
	c := Contract{TypeMeta: jsonx.Meta(KindContract), Comment: initNotes, ChecksumsFile: "checksums.txt"}
	if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
		f, err := modfile.ParseLax("go.mod", data, nil)
		if err != nil || f.Module == nil {
			return nil, jsonx.Errorf("go.mod", "not a module file: %v", err)
		}
		c.Module = f.Module.Mod.Path
	}
	c.Name = initName(c.Module, dir)
	c.License = "LicenseRef-unknown"
	for _, n := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING", "LICENCE"} {
		if text, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			c.ArchiveFiles = append(c.ArchiveFiles, n)
			if ids := licenseIDs(text); len(ids) > 0 {
				c.License = strings.Join(ids, " AND ")
			}
			break
		}
	}
	for _, n := range []string{"README.md", "README", "README.txt"} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			c.ArchiveFiles = append(c.ArchiveFiles, n)
			break
		}
	}
	if c.Module != "" {
		mains, err := findMains(dir)
		if err != nil {
			return nil, err
		}
		for _, m := range mains {
			c.Binaries = append(c.Binaries, Binary{Main: "./cmd/" + m, Name: m, Platforms: DefaultPlatforms})
		}
		if len(c.Binaries) > 0 {
			if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil && toolchainRE.Match(bytes.TrimSpace(out)) {
				c.Toolchain = string(bytes.TrimSpace(out))
			}
		}
	}
	if len(c.Binaries) == 0 {
		c.ChecksumsFile = ""
	}
	check := c
	check.Default()
	if err := check.Validate(); err != nil {
		return nil, err
	}
	return jsonx.MarshalIndent(&c) // defaults left implicit
}

var initNameRE = regexp.MustCompile(`[^a-z0-9._-]+`)

// initName is the release name: the module path's last element (before a
// /vN suffix), else the directory's name, lowered to what a name allows.
func initName(modPath, dir string) string {
	base := ""
	if modPath != "" {
		el := strings.Split(modPath, "/")
		base = el[len(el)-1]
		if len(el) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(base) {
			base = el[len(el)-2]
		}
	} else if abs, err := filepath.Abs(dir); err == nil {
		base = filepath.Base(abs)
	}
	n := strings.Trim(initNameRE.ReplaceAllString(strings.ToLower(base), "-"), "-._")
	if n == "" {
		n = "release"
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// findMains lists the directories cmd/NAME holding a package main (one
// non-test .go file is enough to tell), sorted.
func findMains(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "cmd"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !binNameRE.MatchString(e.Name()) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "cmd", e.Name(), "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
			if err == nil && pf.Name.Name == "main" {
				out = append(out, e.Name())
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
