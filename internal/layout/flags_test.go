package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagWord is a long flag: "--" and a lower-case word.
var flagWord = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// libFlagAllowed lists, per lib/ file, the long flags its string literals
// may hold because they are not ours: arguments to an external program
// (git, agy, artq) or text about other programs' argv. Everything else in
// lib/ names fields; the CLI words them as flags (internal/cli.Flags).
var libFlagAllowed = map[string][]string{
	// git plumbing run by the release builder and the worker's worktrees.
	"lib/release/git.go":       {"--batch", "--verify", "--quiet", "--end-of-options", "--git-dir", "--full-tree", "--format", "--merged", "--tags", "--abbrev", "--match"},
	"lib/release/verifytag.go": {"--end-of-options", "--tags", "--force"},
	// git plumbing that tells a shallow clone, and the git fetch that
	// makes it whole.
	"lib/release/shallow.go":        {"--is-shallow-repository", "--git-dir", "--is-ancestor", "--tags", "--force", "--unshallow"},
	"lib/queue/worker/workspace.go": {"--detach", "--quiet"},
	// the agy provider drives the agy program and reads its --help.
	"lib/agent/provider/agy/agy.go": {"--help", "--version", "--output-format", "--mode", "--sandbox", "--json-schema", "--print-timeout"},
	// redaction rules describe secrets in other programs' argv.
	"lib/obs/redact/rules.go": {"--name"},
	// a next step that runs another tool: artq's own command line.
	"lib/goal/verify.go": {"--watch"},
	// the web view finds an agent task's transcript in artagent's argv.
	"lib/web/data.go": {"--transcript"},
}

// TestLibrariesNameNoFlags: no string literal of a non-test .go file under
// lib/ names a long flag, except the external programs' arguments listed
// in libFlagAllowed. Libraries return errors naming fields
// (exitcode.FieldError); a flag in a library message is wrong for every
// other caller of the library and for the command whose flag has another
// name.
func TestLibrariesNameNoFlags(t *testing.T) {
	root := "../.."
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "lib"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil // generated tables quote other programs (gitleaks' rules)
		}
		allowed := map[string]bool{}
		for _, a := range libFlagAllowed[rel] {
			allowed[a] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			for _, m := range flagWord.FindAllString(s, -1) {
				if allowed[m] {
					seen[rel+" "+m] = true
					continue
				}
				t.Errorf("%s: string %s names the flag %s: return a field (exitcode.Field, exitcode.Ref) and let the CLI name the flag", fset.Position(lit.Pos()), lit.Value, m)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An allowance nothing uses any more is stale: remove it.
	for file, flags := range libFlagAllowed {
		for _, f := range flags {
			if !seen[file+" "+f] {
				t.Errorf("libFlagAllowed[%q] holds %s, which no string there names any more", file, f)
			}
		}
	}
}
