package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// goCommand runs the go command as a module consumer would, with no
// network: GOPROXY=direct makes it read the repository with git itself, and
// the git configuration rewrites https://github.com/fixture/NAME to the
// local test repository (url.<dir>.insteadOf), so `go list -m MOD@REV`
// computes its version from exactly the objects artrelease reads.
type goCommand struct {
	t   *testing.T
	env []string
	dir string
}

func newGoCommand(t *testing.T) *goCommand {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	tmp := t.TempDir()
	g := &goCommand{t: t, dir: filepath.Join(tmp, "work")}
	os.MkdirAll(g.dir, 0o755)
	gitconfig := filepath.Join(tmp, "gitconfig")
	writeFile(t, gitconfig, []byte("[protocol \"file\"]\n\tallow = always\n"))
	g.env = append(os.Environ(),
		"GOPROXY=direct", "GOSUMDB=off", "GONOSUMCHECK=1", "GONOSUMDB=*", "GOPRIVATE=",
		"GOFLAGS=-mod=mod", "GO111MODULE=on", "GOTOOLCHAIN=local", "GOWORK=off",
		"GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOCACHE="+filepath.Join(tmp, "gocache"),
		"GIT_CONFIG_GLOBAL="+gitconfig, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
	)
	return g
}

// serve maps https://github.com/fixture/NAME to the repository dir.
func (g *goCommand) serve(name, dir string) {
	g.t.Helper()
	var gitconfig string
	for _, kv := range g.env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_GLOBAL="); ok {
			gitconfig = v
		}
	}
	f, err := os.OpenFile(gitconfig, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		g.t.Fatal(err)
	}
	fmt.Fprintf(f, "[url %q]\n\tinsteadOf = https://github.com/fixture/%s\n", dir, name)
	f.Close()
}

// version is `go list -m -json MOD@REV`'s Version, or its error line.
func (g *goCommand) version(mod, rev string) (string, error) {
	g.t.Helper()
	cmd := exec.Command("go", "list", "-m", "-json", mod+"@"+rev)
	cmd.Dir, cmd.Env = g.dir, g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s", firstLine(string(out)))
	}
	var info struct{ Version string }
	if err := json.Unmarshal(out, &info); err != nil {
		g.t.Fatalf("go list -m -json: %v\n%s", err, out)
	}
	return info.Version, nil
}

// TestVersionsMatchTheGoCommand builds repositories of every shape that
// decides a Go version and requires the purl version artrelease writes for
// the source package to be the go command's own answer for MOD@COMMIT, and
// a build by tag to be refused exactly when the go command refuses MOD@TAG.
func TestVersionsMatchTheGoCommand(t *testing.T) {
	gocmd := newGoCommand(t)
	type step struct {
		gomod string // go.mod content at this commit ("" = none)
		tags  []string
		// parent, when not 0, starts this commit from step parent-1 instead
		// of the previous one.
		parent int
	}
	cases := []struct {
		name   string
		module string // also the contract's module
		steps  []step
		refs   []string // tags to build by, besides the last commit's hash
	}{
		{name: "v2 module, no tags", module: "/v2", steps: []step{{gomod: "/v2"}}},
		{name: "v1 module, v2 tag on an ancestor", module: "", steps: []step{{gomod: "-", tags: []string{"v1.1.0"}}, {gomod: "-", tags: []string{"v2.0.0"}}, {gomod: "-"}}, refs: []string{"v2.0.0", "v1.1.0"}},
		{name: "v2 module at a v1 tag", module: "/v2", steps: []step{{gomod: "/v2", tags: []string{"v1.5.0"}}}, refs: []string{"v1.5.0"}},
		{name: "v2 module at v2 tag", module: "/v2", steps: []step{{gomod: "/v2", tags: []string{"v1.0.0"}}, {gomod: "/v2", tags: []string{"v2.1.0"}}}, refs: []string{"v2.1.0"}},
		{name: "build metadata on an ancestor", module: "", steps: []step{{gomod: "-", tags: []string{"v1.3.0+meta"}}, {gomod: "-"}}},
		{name: "build metadata on the commit", module: "", steps: []step{{gomod: "-", tags: []string{"v1.0.0"}}, {gomod: "-", tags: []string{"v1.3.0+meta"}}}},
		{name: "pseudo-version-shaped tag", module: "", steps: []step{{gomod: "-", tags: []string{"v1.0.0"}}, {gomod: "-", tags: []string{"v1.2.4-0.20200101000000-abcdefabcdef"}}, {gomod: "-"}}},
		{name: "retracted base", module: "", steps: []step{
			{gomod: "-", tags: []string{"v1.0.0"}},
			{gomod: "-", tags: []string{"v1.0.5"}},
			{gomod: "-\nretract [v1.0.0, v1.0.5]\n", tags: []string{"v1.1.0"}},
			{gomod: "-", parent: 2},
		}},
		{name: "retracted tag on the commit", module: "", steps: []step{
			{gomod: "-", tags: []string{"v1.0.0"}},
			{gomod: "-", tags: []string{"v1.0.5"}},
			{gomod: "-\nretract v1.0.5\n", tags: []string{"v1.1.0"}, parent: 1},
			{gomod: "-", parent: 2},
		}},
		{name: "no go.mod, v2 tag: +incompatible", module: "", steps: []step{{tags: []string{"v2.0.0"}}}, refs: []string{"v2.0.0"}},
		{name: "no go.mod, after a v2 tag", module: "", steps: []step{{tags: []string{"v2.0.0"}}, {}}},
		{name: "prerelease only", module: "", steps: []step{{gomod: "-", tags: []string{"v1.0.0-rc.1"}}, {gomod: "-"}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("case%d", i)
			mod := "github.com/fixture/" + name + tc.module
			r := newTestRepo(t)
			gocmd.serve(name, r.dir)
			contract := fmt.Sprintf(`{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "m", "module": %q, "license": "MIT"}`, mod)
			var commits []string
			for j, s := range tc.steps {
				if s.parent != 0 {
					r.git("checkout", "-q", "--detach", commits[s.parent-1])
				}
				os.Remove(filepath.Join(r.dir, "go.mod"))
				if s.gomod != "" {
					body := "module " + mod + "\n\ngo 1.21\n"
					if rest, ok := strings.CutPrefix(s.gomod, "-"); ok {
						body += rest
					}
					r.write("go.mod", body, 0o644)
				}
				r.write("release.json", contract, 0o644)
				r.write("step.txt", fmt.Sprint(j), 0o644)
				commits = append(commits, r.commit(fmt.Sprintf("step %d", j)))
				for _, tag := range s.tags {
					r.git("tag", "-a", "-m", tag, tag)
				}
			}
			last := commits[len(commits)-1]
			r.git("update-ref", "refs/heads/main", last)
			want, werr := gocmd.version(mod, last)
			if werr != nil {
				t.Fatalf("go list -m %s@%s: %v", mod, last, werr)
			}
			got := sourcePurlVersion(t, r.dir, last)
			t.Logf("%s@%s: go command %s", mod, last[:12], want)
			if got != want {
				t.Errorf("%s@%s: artrelease %s, go command %s", mod, last[:12], got, want)
			}
			for _, ref := range tc.refs {
				want, werr := gocmd.version(mod, ref)
				out := filepath.Join(t.TempDir(), "dist")
				_, berr := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: ref, Out: out})
				switch {
				case werr != nil && berr == nil:
					t.Errorf("build --ref %s passed; go list -m %s@%s: %v", ref, mod, ref, werr)
				case werr == nil && berr != nil:
					t.Errorf("build --ref %s: %v; go list -m says %s", ref, berr, want)
				case werr != nil:
					if exitcode.Of(berr) != exitcode.Usage || !strings.Contains(werr.Error(), strings.SplitN(berr.Error(), "invalid version: ", 2)[len(strings.SplitN(berr.Error(), "invalid version: ", 2))-1]) {
						t.Errorf("build --ref %s: %v (exit %d); go command: %v", ref, berr, exitcode.Of(berr), werr)
					}
				default:
					if got := purlVersionIn(t, out); got != want {
						t.Errorf("build --ref %s: purl version %s, go command %s", ref, got, want)
					}
				}
			}
		})
	}
}

// sourcePurlVersion builds ref and returns the version of the source
// package's purl.
func sourcePurlVersion(t *testing.T, repo, ref string) string {
	t.Helper()
	out, _ := build(t, repo, ref, false)
	return purlVersionIn(t, out)
}

func purlVersionIn(t *testing.T, out string) string {
	t.Helper()
	var m Manifest
	b, _ := os.ReadFile(filepath.Join(out, ManifestName))
	if err := jsonx.Decode(b, "manifest", &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m.Artifact(ArtifactSBOM)
	var doc SPDXDocument
	b, _ = os.ReadFile(filepath.Join(out, s.Name))
	if err := jsonx.Unmarshal(b, "sbom", &doc); err != nil {
		t.Fatal(err)
	}
	for _, ref := range doc.Packages[0].ExternalRefs {
		if ref.ReferenceType == "purl" {
			_, v, _ := strings.Cut(ref.ReferenceLocator, "@")
			return strings.ReplaceAll(v, "%2B", "+")
		}
	}
	t.Fatal("no purl on the source package")
	return ""
}

// TestNestedModulesMatchTheGoCommand: every module of the tree is a package
// of the SBOM, versioned as the go command versions it — a nested module by
// its own DIR/vX.Y.Z tags, a /v2 module kept in a v2/ directory by its
// parent's — go.work members included even where a go.mod alone would be
// ignored (an underscore directory), testdata modules left out.
func TestNestedModulesMatchTheGoCommand(t *testing.T) {
	gocmd := newGoCommand(t)
	r := newTestRepo(t)
	gocmd.serve("nest", r.dir)
	root := "github.com/fixture/nest"
	r.write("release.json", `{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "nest", "license": "MIT"}`, 0o644)
	r.write("go.mod", "module "+root+"\n\ngo 1.21\n\nrequire "+root+"/api v0.3.0\n\nreplace "+root+"/api => ./api\n", 0o644)
	r.write("api/go.mod", "module "+root+"/api\n\ngo 1.21\n\nrequire golang.org/x/text v0.14.0\n", 0o644)
	r.write("api/go.sum", "golang.org/x/text v0.14.0 h1:z3R8QgsVabzxZ3+/cW3dRrB09zQmQcwPUHCmvk9g8o4=\n", 0o644)
	r.write("tools/v2/go.mod", "module "+root+"/tools/v2\n\ngo 1.21\n", 0o644)
	r.write("testdata/mod/go.mod", "module example.com/fixture/ignored\n\ngo 1.21\n", 0o644)
	r.write("_examples/go.mod", "module "+root+"/examples\n\ngo 1.21\n", 0o644)
	r.write("go.work", "go 1.21\n\nuse (\n\t.\n\t./api\n\t./tools/v2\n\t./_examples\n)\n", 0o644)
	r.commit("one")
	for _, tag := range []string{"v1.0.0", "api/v0.3.0", "tools/v2.1.0"} {
		r.git("tag", "-a", "-m", tag, tag)
	}
	r.write("api/doc.go", "package api\n", 0o644)
	head := r.commit("two")

	out, m := build(t, r.dir, "HEAD", false)
	sb, _ := m.Artifact(ArtifactSBOM)
	data, _ := os.ReadFile(filepath.Join(out, sb.Name))
	checkSBOM(t, data)
	var doc SPDXDocument
	if err := jsonx.Unmarshal(data, "sbom", &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]SPDXPackage{}
	for _, p := range doc.Packages[1:] {
		got[p.Name] = p
	}
	for _, mod := range []string{root + "/api", root + "/tools/v2"} {
		want, err := gocmd.version(mod, head)
		if err != nil {
			t.Fatalf("go list -m %s@%s: %v", mod, head, err)
		}
		t.Logf("%s@%s: go command %s", mod, head[:12], want)
		if p, ok := got[mod]; !ok || p.VersionInfo != want {
			t.Errorf("%s: SBOM version %q (present %v), go command %s", mod, p.VersionInfo, ok, want)
		}
	}
	if want, _ := gocmd.version(root, head); "v"+m.Version != want {
		t.Errorf("root version %s, go command %s", m.Version, want)
	}
	if p, ok := got[root+"/examples"]; !ok || !strings.Contains(p.Comment, "go.work member") {
		t.Errorf("go.work member _examples: %+v (present %v)", p, ok)
	}
	if _, ok := got["example.com/fixture/ignored"]; ok {
		t.Error("a testdata module is in the SBOM")
	}
	apiID := got[root+"/api"].SPDXID
	var apiDeps, rootToAPI bool
	for _, rel := range doc.Relationships {
		apiDeps = apiDeps || rel.SPDXElementID == apiID && rel.RelationshipType == "DEPENDS_ON" && rel.RelatedSPDXElement == got["golang.org/x/text"].SPDXID
		rootToAPI = rootToAPI || rel.SPDXElementID == spdxSourceID && rel.RelationshipType == "DEPENDS_ON" && rel.RelatedSPDXElement == apiID
	}
	if !apiDeps || !rootToAPI {
		t.Errorf("edges: api DEPENDS_ON x/text %v, root DEPENDS_ON api (directory replace) %v", apiDeps, rootToAPI)
	}
}
