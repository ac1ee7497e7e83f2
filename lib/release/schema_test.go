package release

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
)

func TestContractSchemaParity(t *testing.T) {
	root := schematest.Load(t, "release-contract.schema.json")
	schematest.Fields(t, root, "", reflect.TypeFor[Contract]())
	schematest.Const(t, root, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, root, "/properties/kind", KindContract)
	schematest.Enum(t, root, "/$defs/ArtifactKind", ContractArtifacts)
	schematest.Enum(t, root, "/properties/submodules", SubmodulePolicies)
	schematest.Enum(t, root, "/$defs/NotesPolicy/properties/group", NoteGroupings)

	s := schematest.Compile(t, "release-contract.schema.json")
	// This repository's own contract, and the test fixture's.
	own, err := os.ReadFile(filepath.Join(testdataDir(), "..", "..", ContractPath))
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, s, "release.json", own)
	if _, err := DecodeContract(own); err != nil {
		t.Errorf("release.json: %v", err)
	}
	schematest.Validate(t, s, "test contract", []byte(testContract))
}

func TestManifestSchemaParity(t *testing.T) {
	root := schematest.Load(t, "release-manifest.schema.json")
	schematest.Fields(t, root, "", reflect.TypeFor[Manifest]())
	schematest.Const(t, root, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, root, "/properties/kind", KindManifest)
	schematest.Enum(t, root, "/$defs/Artifact/properties/kind", ArtifactKinds)

	s := schematest.Compile(t, "release-manifest.schema.json")
	r := fixtureRepo(t)
	r.git("tag", "-a", "-m", "r", "v1.2.3")
	out, _ := build(t, r.dir, "v1.2.3", true)
	data, err := os.ReadFile(filepath.Join(out, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, s, "manifest.json", data)
}
