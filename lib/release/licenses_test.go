package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mitText = `MIT License

Copyright (c) 2020 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

// TestDetectLicense: the confidence rule over a fake module cache — a
// full licence text is detected, two licence files give both joined with
// AND, a licence buried in prose (below 75%) or a file with no licence is
// NOASSERTION for the whole module, no licence file is NOASSERTION, a
// module not in the cache is reported missing; the real module cache's
// golang.org/x/mod is BSD-3-Clause.
func TestDetectLicense(t *testing.T) {
	cache := t.TempDir()
	mod := func(path, version string, files map[string]string) {
		dir := filepath.Join(cache, path+"@"+version)
		os.MkdirAll(dir, 0o755)
		for n, s := range files {
			os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644)
		}
	}
	apache, err := os.ReadFile(filepath.Join(testdataDir(), "..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Repeat("This paragraph is about the project and is no licence text at all. ", 60)
	mod("example.com/mit", "v1.0.0", map[string]string{"LICENSE": mitText, "main.go": "package x\n"})
	mod("example.com/dual", "v1.0.0", map[string]string{"LICENSE-MIT": mitText, "LICENSE-APACHE": string(apache)})
	mod("example.com/buried", "v1.0.0", map[string]string{"LICENSE.md": prose + mitText})
	mod("example.com/partial", "v1.0.0", map[string]string{"LICENSE": mitText, "COPYING": "All rights reserved by nobody in particular.\n"})
	mod("example.com/none", "v1.0.0", map[string]string{"README": mitText})
	// Upper case in a path is escaped in the cache (!upper).
	mod("example.com/!upper", "v1.0.0", map[string]string{"licence.txt": mitText})
	for _, tc := range []struct {
		path, want string
		inCache    bool
	}{
		{"example.com/mit", "MIT", true},
		{"example.com/dual", "Apache-2.0 AND MIT", true},
		{"example.com/buried", "", true},
		{"example.com/partial", "", true},
		{"example.com/none", "", true},
		{"example.com/Upper", "MIT", true},
		{"example.com/absent", "", false},
	} {
		got, ok := detectLicense(cache, tc.path, "v1.0.0")
		if got != tc.want || ok != tc.inCache {
			t.Errorf("%s: %q %v, want %q %v", tc.path, got, ok, tc.want, tc.inCache)
		}
	}
	if mc := os.Getenv("GOMODCACHE"); mc != "" {
		if got, ok := detectLicense(mc, "golang.org/x/mod", "v0.41.0"); ok && got != "BSD-3-Clause" {
			t.Errorf("golang.org/x/mod: %q", got)
		}
	}
}
