package release

import (
	"path"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/art-runtime/art/lib/exitcode"
)

// TreeModule is one Go module whose go.mod ships in the source archive: the
// root module, every nested module, and every go.work member.
type TreeModule struct {
	Dir     string // directory in the tree; "" for the root
	GoMod   *GoMod
	Version string // the go command's version of the module at the commit
	// WorkMember is set when the tree's root go.work uses this directory.
	WorkMember bool
}

// moduleDirs lists the directories of the tree that hold a Go module:
// every go.mod except those the go command never treats as part of the
// repository's modules — under a testdata or vendor directory, or a
// directory whose name starts with "." or "_" (fixtures, vendored copies,
// tool state) — plus every directory a root go.work uses. Sorted, the root
// ("") first. files holds the regular-file paths of the tree.
func moduleDirs(files map[string]bool, gowork []byte) ([]string, map[string]bool, error) {
	dirs := map[string]bool{}
	for p := range files {
		if p != "go.mod" && !strings.HasSuffix(p, "/go.mod") {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "go.mod"), "/")
		if ignoredModuleDir(dir) {
			continue
		}
		dirs[dir] = true
	}
	work := map[string]bool{}
	if gowork != nil {
		wf, err := modfile.ParseWork("go.work", gowork, nil)
		if err != nil {
			return nil, nil, exitcode.Errorf(exitcode.Usage, "go.work: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		for _, u := range wf.Use {
			d := path.Clean(u.Path)
			if d == "." {
				d = ""
			}
			if strings.HasPrefix(d, "../") || d == ".." || path.IsAbs(d) {
				continue // outside the tree: not in this archive
			}
			if !files[path.Join(d, "go.mod")] {
				return nil, nil, exitcode.Errorf(exitcode.Usage, "go.work: use %s: no go.mod in that directory of the tree", u.Path)
			}
			dirs[d] = true
			work[d] = true
		}
	}
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	sort.Strings(out) // "" sorts first
	return out, work, nil
}

func ignoredModuleDir(dir string) bool {
	if dir == "" {
		return false
	}
	for _, el := range strings.Split(dir, "/") {
		if el == "testdata" || el == "vendor" || strings.HasPrefix(el, ".") || strings.HasPrefix(el, "_") {
			return true
		}
	}
	return false
}

// StrayGoMod is a file named go.mod in a subdirectory that the go command
// would never load as a module of a build: it does not parse (a syntax
// fixture, such as a highlighter's test file), or it declares no module.
// The SBOM notes it; it never stops a release, since go build, go list and
// go mod verify ignore it too. The root go.mod and every go.work member
// must parse: the go command loads those.
type StrayGoMod struct {
	Path   string // the file's path in the tree
	Reason string // the parser's one-line complaint
}

// parseTreeModules reads each module directory's go.mod and go.sum (read
// returns a file's bytes, nil when absent). A nested go.mod that is not a
// module (StrayGoMod) is returned apart, not as an error.
func parseTreeModules(dirs []string, work map[string]bool, read func(string) ([]byte, error)) ([]TreeModule, []StrayGoMod, error) {
	var mods []TreeModule
	var stray []StrayGoMod
	for _, d := range dirs {
		gm, err := read(path.Join(d, "go.mod"))
		if err != nil {
			return nil, nil, err
		}
		if d != "" && !work[d] {
			if reason := notAModule(gm); reason != "" {
				stray = append(stray, StrayGoMod{Path: d + "/go.mod", Reason: reason})
				continue
			}
		}
		gs, err := read(path.Join(d, "go.sum"))
		if err != nil {
			return nil, nil, err
		}
		parsed, err := ParseGoMod(gm, gs)
		if err != nil {
			if d != "" {
				return nil, nil, exitcode.Wrap(exitcode.Of(err), prefixErr(d+"/", err))
			}
			return nil, nil, err
		}
		mods = append(mods, TreeModule{Dir: d, GoMod: parsed, WorkMember: work[d]})
	}
	return mods, stray, nil
}

// notAModule says why a go.mod is no module the go command would load
// ("" when it is one): it does not parse, or has no module directive.
func notAModule(gomod []byte) string {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "does not parse: " + firstLine(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if f.Module == nil {
		return "declares no module"
	}
	return ""
}

type prefixedError struct {
	prefix string
	err    error
}

func (e *prefixedError) Error() string { return e.prefix + e.err.Error() }
func (e *prefixedError) Unwrap() error { return e.err }

func prefixErr(prefix string, err error) error { return &prefixedError{prefix, err} }
