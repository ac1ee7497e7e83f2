package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitContract: on this repository, init names the module, a release
// name, the licence from LICENSE, every cmd/* main, and the result decodes
// as a contract (the "//" notes included); on a directory with neither
// go.mod nor licence it still decodes.
func TestInitContract(t *testing.T) {
	root := filepath.Join(testdataDir(), "..", "..")
	data, err := InitContract(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeContract(data)
	if err != nil {
		t.Fatalf("init's contract does not decode: %v\n%s", err, data)
	}
	if c.Module != "github.com/art-runtime/art" || c.Name != "art" || c.License != "Apache-2.0" || len(c.Comment) == 0 {
		t.Errorf("contract %+v", c)
	}
	var names []string
	for _, b := range c.Binaries {
		names = append(names, b.Name)
		if len(b.Platforms) != 4 {
			t.Errorf("%s platforms %v", b.Name, b.Platforms)
		}
	}
	// Every command of this repository is a main under cmd/.
	cmds, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range cmds {
		if e.IsDir() {
			want = append(want, e.Name())
		}
	}
	if len(want) < 7 || strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("binaries %v, want the mains under cmd/: %v", names, want)
	}
	var raw map[string]any
	json.Unmarshal(data, &raw)
	if _, ok := raw["//"]; !ok {
		t.Errorf("no // notes:\n%s", data)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "README.md"), []byte("x\n"), 0o644)
	data, err = InitContract(empty)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := DecodeContract(data); err != nil || c.License != "LicenseRef-unknown" || len(c.Binaries) != 0 {
		t.Errorf("empty dir: %v %+v", err, c)
	}
}
