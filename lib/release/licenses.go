package release

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/github/go-spdx/v2/spdxexp"
	"github.com/google/licensecheck"
	"golang.org/x/mod/module"
)

// licenseMinCoverage is the confidence rule: a licence file counts as
// licence L only when github.com/google/licensecheck matches licence text
// (not a URL) over at least this percentage of its words — the rest is
// room for copyright lines and headers. A licence file below it is
// unknown, and so is its module.
const licenseMinCoverage = 75.0

// licenseFileRE matches the licence files a module carries at its root:
// LICENSE, LICENCE, COPYING, with any suffix (LICENSE.md, LICENSE-MIT,
// COPYING.txt), in any case.
var licenseFileRE = regexp.MustCompile(`(?i)^(licen[cs]e|copying)([.-].*)?$`)

// licenseRule is the rule the SBOMs state.
const licenseRule = "detected by github.com/google/licensecheck over the licence files (LICENSE, LICENCE, COPYING and their .EXT/-SUFFIX forms) at the root of the module's directory in the module cache; " +
	"a file counts only when at least 75% of its words match licence texts, and a module only when every such file does; " +
	"distinct licences of one module are joined with AND (a choice its authors offer is not inferred); " +
	"a module absent from the cache, without licence files, with a file below 75% or a licence with no SPDX identifier is NOASSERTION. " +
	"licenseDeclared and licenseConcluded both carry that result."

// detectLicense returns the SPDX expression of the module version in the
// module cache, "" when unknown, and whether the module is in the cache.
func detectLicense(modCache, path, version string) (string, bool) {
	if modCache == "" || version == "" {
		return "", false
	}
	ep, err1 := module.EscapePath(path)
	ev, err2 := module.EscapeVersion(version)
	if err1 != nil || err2 != nil {
		return "", false
	}
	dir := filepath.Join(modCache, filepath.FromSlash(ep)+"@"+ev)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	ids := map[string]bool{}
	files := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenseFileRE.MatchString(e.Name()) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(text) > 1<<20 {
			return "", true
		}
		files++
		found := licenseIDs(text)
		if len(found) == 0 {
			return "", true
		}
		for _, id := range found {
			ids[id] = true
		}
	}
	if files == 0 {
		return "", true
	}
	var list []string
	for id := range ids {
		list = append(list, id)
	}
	sort.Strings(list)
	expr := strings.Join(list, " AND ")
	if ok, _ := spdxexp.ValidateLicenses([]string{expr}); !ok {
		return "", true
	}
	return expr, true
}

// licenseIDs are the licences a licence file's text matches under the
// confidence rule, nil when it is below it.
func licenseIDs(text []byte) []string {
	cov := licensecheck.Scan(text)
	if cov.Percent < licenseMinCoverage {
		return nil
	}
	seen := map[string]bool{}
	var ids []string
	for _, m := range cov.Match {
		if m.IsURL || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		ids = append(ids, m.ID)
	}
	return ids
}
