package release

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// spdxSchema compiles the vendored SPDX 2.3 JSON schema (draft-07, from
// spdx/spdx-spec schemas/spdx-schema.json at v2.3).
func spdxSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(testdataDir(), "spdx-schema-2.3.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateSPDX(t testing.TB, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(doc)
}

func TestSBOMValidatesAgainstSPDX23Schema(t *testing.T) {
	schema := spdxSchema(t)
	r := fixtureRepo(t)
	out, m := build(t, r.dir, "HEAD", false)
	sb, _ := m.Artifact(ArtifactSBOM)
	data, err := os.ReadFile(filepath.Join(out, sb.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateSPDX(t, schema, data); err != nil {
		t.Fatalf("SBOM does not validate against SPDX 2.3: %v", err)
	}
	// The schema can fail: a document missing a required field, or with a
	// field SPDX 2.3 does not have, is rejected.
	var doc map[string]any
	json.Unmarshal(data, &doc)
	delete(doc, "dataLicense")
	bad, _ := json.Marshal(doc)
	if validateSPDX(t, schema, bad) == nil {
		t.Error("schema accepted an SBOM without dataLicense")
	}
	doc["dataLicense"] = "CC0-1.0"
	doc["packages"].([]any)[0].(map[string]any)["filesAnalysed"] = false
	bad, _ = json.Marshal(doc)
	if validateSPDX(t, schema, bad) == nil {
		t.Error("schema accepted an unknown package field")
	}
}

// TestSBOMDescribesFixtureGoMod checks the SBOM against the fixture go.mod
// and go.sum: every requirement after replace, purls keeping the path's case
// and escaping "+", go.sum h1 hashes as go-sum-h1 references (never as a
// SHA256 checksum: h1 hashes no file), indirect marked, a local
// replacement without purl or hash.
func TestSBOMDescribesFixtureGoMod(t *testing.T) {
	r := fixtureRepo(t)
	out, m := build(t, r.dir, "HEAD", false)
	sb, _ := m.Artifact(ArtifactSBOM)
	data, _ := os.ReadFile(filepath.Join(out, sb.Name))
	var doc SPDXDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	type want struct {
		name, version, purl, sha, comment string
	}
	h := func(h1 string) string { return h1 }
	wants := []want{
		{"example.com/local/lib", "v0.0.0-20260102150805-" + m.Commit[:12], "pkg:golang/example.com/local/lib@v0.0.0-20260102150805-" + m.Commit[:12], "", "Go module in the directory lib of the source archive"},
		{"github.com/BurntSushi/toml", "v1.3.2", "pkg:golang/github.com/BurntSushi/toml@v1.3.2", h("h1:AczMIuUHxSR0hRDEKtoZDl7N2l0fz05lcIkCIEvW/sA="), ""},
		{"github.com/docker/docker", "v20.10.24+incompatible", "pkg:golang/github.com/docker/docker@v20.10.24%2Bincompatible", "", "indirect requirement; no go.sum hash for the module's content"},
		{"github.com/new/thing", "v1.1.0", "pkg:golang/github.com/new/thing@v1.1.0", h("h1:3W/i5CRebtQizhS98ApGB6pkrpYzGb6uJUMGSu/MlH4="), "replaces github.com/old/thing@v1.0.0"},
		// Indirect for the root module, direct for lib: one package.
		{"golang.org/x/text", "v0.14.0", "pkg:golang/golang.org/x/text@v0.14.0", h("h1:z3R8QgsVabzxZ3+/cW3dRrB09zQmQcwPUHCmvk9g8o4="), ""},
	}
	if len(doc.Packages) != len(wants)+1 {
		t.Fatalf("%d packages, want the source and %d modules", len(doc.Packages), len(wants))
	}
	src := doc.Packages[0]
	arch, _ := m.Artifact(ArtifactArchive)
	if src.Name != "fixture" || src.VersionInfo != m.Version || src.LicenseDeclared != "Apache-2.0 OR MIT" ||
		src.Checksums[0].ChecksumValue != arch.SHA256 || src.FilesAnalyzed ||
		src.ExternalRefs[0].ReferenceLocator != "pkg:golang/example.com/Fixture/app@v"+m.Version {
		t.Errorf("source package %+v", src)
	}
	for i, w := range wants {
		p := doc.Packages[i+1]
		if p.Name != w.name || p.VersionInfo != w.version || p.FilesAnalyzed {
			t.Errorf("package %d = %s@%s, want %s@%s", i+1, p.Name, p.VersionInfo, w.name, w.version)
		}
		purl, sha := "", ""
		for _, ref := range p.ExternalRefs {
			switch {
			case ref.ReferenceType == "purl":
				purl = ref.ReferenceLocator
			case ref.ReferenceCategory == "OTHER" && ref.ReferenceType == "go-sum-h1":
				sha = ref.ReferenceLocator
			}
		}
		if purl != w.purl {
			t.Errorf("%s purl %q, want %q", w.name, purl, w.purl)
		}
		if sha != w.sha || len(p.Checksums) != 0 {
			t.Errorf("%s go.sum hash %q, want %q; checksums %v (want none)", w.name, sha, w.sha, p.Checksums)
		}
		if w.comment != "" && !strings.HasPrefix(p.Comment, w.comment) {
			t.Errorf("%s comment %q, want prefix %q", w.name, p.Comment, w.comment)
		}
	}
	byID := map[string]string{}
	for _, p := range doc.Packages {
		byID[p.SPDXID] = p.Name
	}
	var got []string
	for _, rel := range doc.Relationships {
		got = append(got, byID[rel.SPDXElementID]+" "+rel.RelationshipType+" "+byID[rel.RelatedSPDXElement])
	}
	wantRels := []string{
		" DESCRIBES fixture",
		"fixture CONTAINS example.com/local/lib",
		"fixture DEPENDS_ON example.com/local/lib",
		"fixture DEPENDS_ON github.com/BurntSushi/toml",
		"fixture DEPENDS_ON github.com/docker/docker",
		"fixture DEPENDS_ON github.com/new/thing",
		"fixture DEPENDS_ON golang.org/x/text",
		"example.com/local/lib DEPENDS_ON golang.org/x/text",
	}
	if strings.Join(got, "\n") != strings.Join(wantRels, "\n") {
		t.Errorf("relationships\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRels, "\n"))
	}
	if doc.CreationInfo.Created != "2026-01-02T15:08:05Z" {
		t.Errorf("created %s, want the commit time", doc.CreationInfo.Created)
	}
}

// TestSBOMNamespaceFollowsContent: the same content gets the same
// namespace, any change a different one.
func TestSBOMNamespaceFollowsContent(t *testing.T) {
	r := fixtureRepo(t)
	id, err := resolveForTest(r, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := DecodeContract([]byte(testContract))
	in := sbomInput{Contract: c, ID: id, ArchiveName: "a.tar.gz", ArchiveSHA256: strings.Repeat("a", 64)}
	a, _ := buildSBOM(in)
	b, _ := buildSBOM(in)
	if !bytes.Equal(a, b) {
		t.Fatal("two SBOMs of the same input differ")
	}
	in.ArchiveSHA256 = strings.Repeat("b", 64)
	d, _ := buildSBOM(in)
	var x, y SPDXDocument
	json.Unmarshal(a, &x)
	json.Unmarshal(d, &y)
	if x.DocumentNamespace == y.DocumentNamespace {
		t.Error("different content, same namespace")
	}
	if !strings.HasPrefix(x.DocumentNamespace, spdxNamespaceBase+"fixture-") {
		t.Errorf("namespace %s", x.DocumentNamespace)
	}
}
