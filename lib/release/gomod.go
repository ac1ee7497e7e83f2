package release

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/art-runtime/art/lib/exitcode"
)

// GoModule is one module a go.mod requires, as the build uses it: after
// replace directives.
type GoModule struct {
	Path     string // the module path the build uses (the replacement's, if replaced by a module)
	Version  string // its version; "" for a local-directory replacement
	Indirect bool
	// H1 is the go.sum "h1:" hash of the module's content (SHA-256 of the
	// dirhash summary, base64); "" when go.sum has none.
	H1 string
	// Replaces is the original "path@version" when a replace directive
	// changed this requirement.
	Replaces string
	// LocalDir is set for a replacement by a directory in the repository:
	// its contents are part of the source archive, not a download.
	LocalDir string
}

// GoMod is what the SBOM needs from a tree's go.mod and go.sum.
type GoMod struct {
	Module  string
	Go      string // the go directive
	Modules []GoModule
}

// ParseGoMod reads go.mod (and go.sum, which may be nil) as the go command
// does, and lists every required module, direct and indirect, sorted by path
// then version. It refuses a go.sum line it cannot read rather than dropping
// a checksum silently.
func ParseGoMod(gomod, gosum []byte) (*GoMod, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "go.mod: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if f.Module == nil {
		return nil, exitcode.Errorf(exitcode.Usage, "go.mod: no module directive")
	}
	sums, err := parseGoSum(gosum)
	if err != nil {
		return nil, err
	}
	gm := &GoMod{Module: f.Module.Mod.Path}
	if f.Go != nil {
		gm.Go = f.Go.Version
	}
	// A replace with a version applies to that version only; one without
	// applies to every version (cmd/go's rule).
	type key struct{ path, version string }
	replaces := map[key]*modfile.Replace{}
	for _, r := range f.Replace {
		replaces[key{r.Old.Path, r.Old.Version}] = r
	}
	seen := map[key]bool{}
	for _, req := range f.Require {
		m := GoModule{Path: req.Mod.Path, Version: req.Mod.Version, Indirect: req.Indirect}
		rep := replaces[key{req.Mod.Path, req.Mod.Version}]
		if rep == nil {
			rep = replaces[key{req.Mod.Path, ""}]
		}
		if rep != nil {
			m.Replaces = req.Mod.Path + "@" + req.Mod.Version
			if rep.New.Version == "" {
				// A directory: the module is the original path at no
				// downloadable version; its files are in the tree.
				m.LocalDir = rep.New.Path
				m.Version = ""
			} else {
				m.Path, m.Version = rep.New.Path, rep.New.Version
			}
		}
		if m.LocalDir == "" {
			m.H1 = sums[m.Path+"@"+m.Version]
		}
		k := key{m.Path, m.Version + "\x00" + m.LocalDir}
		if seen[k] {
			continue
		}
		seen[k] = true
		gm.Modules = append(gm.Modules, m)
	}
	sort.Slice(gm.Modules, func(i, j int) bool {
		a, b := gm.Modules[i], gm.Modules[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.LocalDir < b.LocalDir
	})
	return gm, nil
}

// parseGoSum maps "path@version" to the h1 hash of the module's files
// (the "/go.mod" lines hash only the go.mod file and are not the module).
func parseGoSum(data []byte) (map[string]string, error) {
	sums := map[string]string{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, exitcode.Errorf(exitcode.Usage, "go.sum:%d: want \"path version hash\", got %q", i+1, s)
		}
		path, version, hash := f[0], f[1], f[2]
		if strings.HasSuffix(version, "/go.mod") {
			continue
		}
		if err := module.Check(path, version); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "go.sum:%d: %v", i+1, err)
		}
		if !strings.HasPrefix(hash, "h1:") {
			continue // a future hash algorithm: not ours to interpret
		}
		if _, err := h1Hex(hash); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "go.sum:%d: %v", i+1, err)
		}
		sums[path+"@"+version] = hash
	}
	return sums, nil
}

// h1Hex turns a go.sum "h1:<base64>" into the lowercase hex SPDX wants: the
// SHA-256 of the module's dirhash summary (golang.org/x/mod/sumdb/dirhash
// Hash1), the same 32 bytes re-encoded.
func h1Hex(h1 string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h1, "h1:"))
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("%q is not an h1 hash (base64 of 32 bytes)", h1)
	}
	return hex.EncodeToString(raw), nil
}
