package release

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdxlib"
)

// checkSBOM validates an SBOM three independent ways: the upstream SPDX 2.3
// JSON schema (vendored unmodified), spdx/tools-golang's reader and
// document validation, and the NTIA minimum elements (supplier, component
// name, version, unique identifier, dependency relationship, SBOM author,
// timestamp) read from tools-golang's parse, not from artrelease's types.
func checkSBOM(t *testing.T, data []byte) {
	t.Helper()
	if err := validateSPDX(t, spdxSchema(t), data); err != nil {
		t.Errorf("SPDX 2.3 schema: %v", err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("tools-golang cannot read the SBOM: %v", err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Errorf("tools-golang validation: %v", err)
	}
	for _, p := range ntiaProblems(doc) {
		t.Errorf("NTIA minimum elements: %s", p)
	}
}

// ntiaProblems lists what the NTIA minimum elements (2021) require and the
// document lacks: for every component a supplier name (NOASSERTION, SPDX's
// "unknown", is no name), a name, a version and a unique
// identifier (a purl for every Go module); a dependency relationship
// reaching every component from the described package; the SBOM's author
// (a creator) and timestamp.
func ntiaProblems(doc *spdx.Document) []string {
	var probs []string
	author := false
	if doc.CreationInfo != nil {
		for _, c := range doc.CreationInfo.Creators {
			author = author || c.CreatorType == "Organization" || c.CreatorType == "Person"
		}
	}
	if !author {
		probs = append(probs, "no SBOM author (an Organization or Person creator; a Tool is not an author)")
	}
	if doc.CreationInfo == nil || doc.CreationInfo.Created == "" {
		probs = append(probs, "no timestamp (created)")
	}
	// What the document describes (the source archive, a binary) is
	// identified by its file's checksum; every Go module also by a purl.
	described := map[string]bool{}
	for _, r := range doc.Relationships {
		if r.Relationship == "DESCRIBES" {
			described[string(r.RefB.ElementRefID)] = true
		}
	}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		id := string(p.PackageSPDXIdentifier)
		switch {
		case p.PackageName == "":
			probs = append(probs, id+": no name")
		case p.PackageVersion == "":
			probs = append(probs, p.PackageName+": no version")
		case p.PackageSupplier == nil || p.PackageSupplier.Supplier == "" || p.PackageSupplier.Supplier == "NOASSERTION":
			probs = append(probs, p.PackageName+": no supplier")
		case ids[id]:
			probs = append(probs, p.PackageName+": identifier "+id+" not unique")
		}
		ids[id] = true
		if !described[id] || len(p.PackageExternalReferences) > 0 {
			purl := false
			for _, ref := range p.PackageExternalReferences {
				purl = purl || ref.RefType == "purl" && strings.HasPrefix(ref.Locator, "pkg:golang/")
			}
			if !purl {
				probs = append(probs, p.PackageName+": no purl")
			}
		}
	}
	// Every package is reached from what the document describes.
	edges := map[string][]string{}
	var roots []string
	for _, r := range doc.Relationships {
		a, b := string(r.RefA.ElementRefID), string(r.RefB.ElementRefID)
		switch r.Relationship {
		case "DESCRIBES":
			roots = append(roots, b)
		case "DEPENDS_ON", "CONTAINS", "STATIC_LINK":
			edges[a] = append(edges[a], b)
		}
	}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		for _, n := range edges[id] {
			walk(n)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	for id := range ids {
		if !seen[id] {
			probs = append(probs, id+": no relationship reaches it from the described package")
		}
	}
	return probs
}

func TestSBOMMinimumElementsAndValidators(t *testing.T) {
	r := fixtureRepo(t)
	r.git("tag", "-a", "-m", "r", "v1.2.3")
	for _, ref := range []string{"HEAD", "v1.2.3"} {
		out, m := build(t, r.dir, ref, false)
		sb, _ := m.Artifact(ArtifactSBOM)
		data, err := os.ReadFile(filepath.Join(out, sb.Name))
		if err != nil {
			t.Fatal(err)
		}
		checkSBOM(t, data)
	}
}

// TestNTIACheckCanFail: the minimum-elements check rejects a component
// without a supplier, a version, or a relationship.
func TestNTIACheckCanFail(t *testing.T) {
	r := fixtureRepo(t)
	out, m := build(t, r.dir, "HEAD", false)
	sb, _ := m.Artifact(ArtifactSBOM)
	data, _ := os.ReadFile(filepath.Join(out, sb.Name))
	for _, edit := range []struct {
		name, old, new string
		n              int
	}{
		{"no supplier", `"supplier": "Organization: golang.org/x",`, ``, 1},
		{"unknown supplier", `"supplier": "Organization: golang.org/x",`, `"supplier": "NOASSERTION",`, 1},
		{"no author", `"Organization: example.com/Fixture",
      "Tool: artrelease"`, `"Tool: artrelease"`, 1},
		{"no version", `"versionInfo": "v1.3.2",`, ``, 1},
		{"no edges", `"relationshipType": "DEPENDS_ON"`, `"relationshipType": "OTHER"`, -1},
	} {
		bad := bytes.Replace(data, []byte(edit.old), []byte(edit.new), edit.n)
		if bytes.Equal(bad, data) {
			t.Fatalf("%s: edit did not apply", edit.name)
		}
		doc, err := spdxjson.Read(bytes.NewReader(bad))
		if err != nil {
			t.Fatalf("%s: %v", edit.name, err)
		}
		if len(ntiaProblems(doc)) == 0 {
			t.Errorf("%s: NTIA check passed", edit.name)
		}
	}
}
