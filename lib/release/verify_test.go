package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// copyDir copies a release directory so each case can damage its own.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	os.MkdirAll(dst, 0o755)
	for name, b := range readDir(t, src) {
		os.WriteFile(filepath.Join(dst, name), b, 0o644)
	}
	return dst
}

// resign rewrites SHA256SUMS (and optionally the manifest) to match the
// files, as an attacker who edits an artifact would.
func resign(t testing.TB, dir string, manifestToo bool) {
	t.Helper()
	var m Manifest
	data, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	if err := jsonx.Decode(data, "manifest", &m); err != nil {
		t.Fatal(err)
	}
	if manifestToo {
		for i, a := range m.Artifacts {
			sum, _ := fileSHA256(filepath.Join(dir, a.Name))
			fi, _ := os.Stat(filepath.Join(dir, a.Name))
			m.Artifacts[i].SHA256, m.Artifacts[i].Size = sum, fi.Size()
		}
		data, _ = jsonx.MarshalIndent(&m)
		os.WriteFile(filepath.Join(dir, ManifestName), data, 0o644)
	}
	var sums []Sum
	for _, name := range append([]string{ManifestName}, artifactNames(&m)...) {
		s, _ := fileSHA256(filepath.Join(dir, name))
		sums = append(sums, Sum{SHA256: s, Name: name})
	}
	os.WriteFile(filepath.Join(dir, SumsName), FormatSums(sums), 0o644)
}

func artifactNames(m *Manifest) []string {
	var n []string
	for _, a := range m.Artifacts {
		n = append(n, a.Name)
	}
	return n
}

func flipByte(t testing.TB, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at = int64(len(b)) + at
	}
	b[at] ^= 0x01
	os.WriteFile(path, b, 0o644)
}

func TestVerifyCatchesTampering(t *testing.T) {
	r := fixtureRepo(t)
	good, m := build(t, r.dir, "HEAD", true)
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: good, Repo: r.dir}); err != nil || !rep.OK || !rep.Rebuilt {
		t.Fatalf("a fresh release does not verify: %v %+v", err, rep)
	}
	plain, _ := build(t, r.dir, "HEAD", false) // no provenance to name the notes' digest
	arch, _ := m.Artifact(ArtifactArchive)
	sbom, _ := m.Artifact(ArtifactSBOM)
	prov, _ := m.Artifact(ArtifactProvenance)
	cases := []struct {
		name   string
		damage func(dir string)
		repo   bool   // verify with a rebuild
		want   string // in the first problem's text
	}{
		{"flipped archive byte", func(d string) { flipByte(t, filepath.Join(d, arch.Name), 200) }, false, arch.Name + ": sha256"},
		{"flipped sbom byte", func(d string) { flipByte(t, filepath.Join(d, sbom.Name), 40) }, false, sbom.Name + ": sha256"},
		{"flipped notes byte", func(d string) { flipByte(t, filepath.Join(d, NotesName), -2) }, false, NotesName + ": sha256"},
		{"flipped manifest byte", func(d string) { flipByte(t, filepath.Join(d, ManifestName), -3) }, false, ManifestName},
		{"flipped SHA256SUMS byte", func(d string) { flipByte(t, filepath.Join(d, SumsName), 3) }, false, ""},
		{"missing archive", func(d string) { os.Remove(filepath.Join(d, arch.Name)) }, false, arch.Name + ": missing"},
		{"missing notes", func(d string) { os.Remove(filepath.Join(d, NotesName)) }, false, NotesName + ": missing"},
		{"missing SHA256SUMS", func(d string) { os.Remove(filepath.Join(d, SumsName)) }, false, SumsName + ": missing"},
		{"missing manifest", func(d string) { os.Remove(filepath.Join(d, ManifestName)) }, false, ManifestName + ": missing"},
		{"extra file", func(d string) { os.WriteFile(filepath.Join(d, "evil.sh"), []byte("x"), 0o644) }, false, "evil.sh: extra file"},
		{"extra directory", func(d string) { os.Mkdir(filepath.Join(d, "sub"), 0o755) }, false, "sub: extra entry"},
		// An attacker who recomputes SHA256SUMS and the manifest after
		// editing an artifact is caught by what the artifacts say of each
		// other.
		{"archive swapped, sums and manifest redone", func(d string) {
			flipByte(t, filepath.Join(d, arch.Name), 200)
			resign(t, d, true)
		}, false, arch.Name},
		{"sbom edited, sums and manifest redone", func(d string) {
			p := filepath.Join(d, sbom.Name)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"Apache-2.0 OR MIT"`, `"MIT"`, 1)), 0o644)
			resign(t, d, true)
		}, false, sbom.Name + ": documentNamespace"},
		{"provenance edited, sums and manifest redone", func(d string) {
			p := filepath.Join(d, prov.Name)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), arch.SHA256, strings.Repeat("0", 64), 1)), 0o644)
			resign(t, d, true)
		}, false, prov.Name + ": subjects"},
		{"manifest claims another commit, sums redone", func(d string) {
			p := filepath.Join(d, ManifestName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), m.Commit, strings.Repeat("1", 40), 1)), 0o644)
			resign(t, d, false)
		}, false, sbom.Name + ": the source package does not name commit 1111"},
		// The notes name only the commit; a rebuild catches a rewritten
		// history in them.
		{"notes rewritten, sums and manifest redone", func(d string) {
			p := filepath.Join(d, NotesName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "a guide", "a backdoor", 1)), 0o644)
			resign(t, d, true)
		}, true, NotesName + ": differs from a rebuild"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := good
			if tc.repo {
				src = plain
			}
			dir := copyDir(t, src)
			tc.damage(dir)
			o := VerifyOptions{Dir: dir}
			if tc.repo {
				o.Repo = r.dir
			}
			rep, err := Verify(context.Background(), o)
			if !errors.Is(err, ErrMismatch) || exitcode.Of(err) != exitcode.Failed {
				t.Fatalf("Verify = %v (exit %d), want ErrMismatch (1)", err, exitcode.Of(err))
			}
			if rep.OK || len(rep.Problems) == 0 {
				t.Fatalf("report %+v says OK", rep)
			}
			var all []string
			for _, p := range rep.Problems {
				all = append(all, p.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("problems %q do not mention %q", all, tc.want)
			}
		})
	}
	if _, err := Verify(context.Background(), VerifyOptions{Dir: filepath.Join(t.TempDir(), "none")}); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("missing dir: %v, want exit 4", err)
	}
}

// editSBOM rewrites the release's SBOM through edit, recomputes its
// namespace, and re-signs the manifest and SHA256SUMS, as an attacker with
// write access to the release directory would.
func editSBOM(t *testing.T, dir string, m *Manifest, edit func(*SPDXDocument)) {
	t.Helper()
	s, _ := m.Artifact(ArtifactSBOM)
	var doc SPDXDocument
	b, _ := os.ReadFile(filepath.Join(dir, s.Name))
	if err := jsonx.Unmarshal(b, "sbom", &doc); err != nil {
		t.Fatal(err)
	}
	edit(&doc)
	out, err := encodeSBOM(doc)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, s.Name), out)
	resign(t, dir, true)
}

// TestVerifyRecomputesSBOMFromArchive: without --repo, an SBOM whose module
// list was edited (a version and purl changed, a module deleted, a module
// added, a checksum changed, the license changed) with every digest
// rewritten is refused, because verify recomputes it from the archive's
// go.mod and go.sum files.
func TestVerifyRecomputesSBOMFromArchive(t *testing.T) {
	r := fixtureRepo(t)
	good, m := build(t, r.dir, "HEAD", false)
	if _, err := Verify(context.Background(), VerifyOptions{Dir: good}); err != nil {
		t.Fatalf("fresh release: %v", err)
	}
	find := func(doc *SPDXDocument, name string) int {
		for i, p := range doc.Packages {
			if p.Name == name {
				return i
			}
		}
		t.Fatalf("no package %s", name)
		return -1
	}
	for name, edit := range map[string]func(*SPDXDocument){
		"version and purl changed": func(d *SPDXDocument) {
			i := find(d, "github.com/BurntSushi/toml")
			d.Packages[i].VersionInfo = "v1.3.1"
			d.Packages[i].ExternalRefs[0].ReferenceLocator = "pkg:golang/github.com/BurntSushi/toml@v1.3.1"
		},
		"module deleted": func(d *SPDXDocument) {
			i := find(d, "golang.org/x/text")
			id := d.Packages[i].SPDXID
			d.Packages = slices.Delete(d.Packages, i, i+1)
			d.Relationships = slices.DeleteFunc(d.Relationships, func(r SPDXRelationship) bool { return r.RelatedSPDXElement == id })
		},
		"module added": func(d *SPDXDocument) {
			p := d.Packages[find(d, "golang.org/x/text")]
			p.Name, p.SPDXID = "example.com/evil", "SPDXRef-Package-go-example.com-evil"
			d.Packages = append(d.Packages, p)
		},
		"checksum changed": func(d *SPDXDocument) {
			i := find(d, "github.com/new/thing")
			d.Packages[i].ExternalRefs[1].ReferenceLocator = "h1:" + strings.Repeat("A", 43) + "="
		},
		"license changed": func(d *SPDXDocument) { d.Packages[0].LicenseDeclared = "MIT" },
		"nested module pseudo-version of another commit": func(d *SPDXDocument) {
			i := find(d, "example.com/local/lib")
			d.Packages[i].VersionInfo = "v0.0.0-20200101000000-abcdefabcdef"
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, good)
			editSBOM(t, dir, m, edit)
			rep, err := Verify(context.Background(), VerifyOptions{Dir: dir})
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("verify passed an edited SBOM: %v %+v", err, rep)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || strings.Contains(p.Msg, "archive's go.mod/go.sum") || strings.Contains(p.Msg, "pseudo-version")
			}
			if !found {
				t.Errorf("no problem names the recomputation: %+v", rep.Problems)
			}
		})
	}
}

// TestVerifyWithContractFile: a release built with --contract FILE verifies
// with --repo only when given the same file; another file is named.
func TestVerifyWithContractFile(t *testing.T) {
	r := fixtureRepo(t)
	cf := filepath.Join(t.TempDir(), "release.json")
	writeFile(t, cf, []byte(strings.Replace(testContract, `"Apache-2.0 OR MIT"`, `"MIT"`, 1)))
	out := filepath.Join(t.TempDir(), "dist")
	if _, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out, ContractFile: cf}); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: out, Repo: r.dir, ContractFile: cf}); err != nil || !rep.Rebuilt {
		t.Fatalf("verify --repo --contract: %v %+v", err, rep)
	}
	rep, err := Verify(context.Background(), VerifyOptions{Dir: out, Repo: r.dir})
	if fe := exitcode.AsField(err); !errors.Is(err, ErrMismatch) || fe == nil || fe.Field != "ContractFile" ||
		!strings.Contains(err.Error(), "pass the file it was built with as contract-file FILE") ||
		len(rep.Problems) != 1 || rep.Problems[0].Err != fe || exitcode.Of(err) != exitcode.Failed {
		t.Errorf("verify --repo without --contract: %v %+v", err, rep)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	writeFile(t, other, []byte(testContract))
	if _, err := Verify(context.Background(), VerifyOptions{Dir: out, ContractFile: other}); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "the release was built under") {
		t.Errorf("verify --contract OTHER: %v", err)
	}
}
