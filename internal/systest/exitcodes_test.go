package systest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestUnassertedExits(t *testing.T) {
	for _, c := range []struct {
		name, script string
		want         []int
	}{
		{"ok.txtar", "# refused (exit 2)\nexits 2 artq enqueue\n", nil},
		{"bang.txtar", "# refused (exit 2)\n! exec artq enqueue\n", []int{2}},
		{"other.txtar", "# refused, exits 4\nexits 2 artq status x\n", []int{4}},
		{"two.txtar", "# exit 3 here\nexits 3 a\n# and exit status 4 there\n! exec a\n", []int{4}},
		{"cond.txtar", "# exit 2\n[linux] exits 2 artq x\n", nil},
		{"zero.txtar", "# fsck passes (exit 0)\nexec artq fsck\n", nil},
		{"zerobang.txtar", "# fsck passes (exit 0)\n! exec artq fsck\n", []int{0}},
		{"zerobg.txtar", "# exits 0 later\nexec artq work &\nwait\n", nil},
		{"tool.txtar", "# exit 0\nartq status\n", nil},
		{"usage_exit2.txtar", "! exec artq\n", []int{2}},
		{"files.txtar", "exec true\n-- a.txt --\n# exit 5\n", nil},
		{"exited.txtar", "# it exited with code 7\n", []int{7}},
	} {
		if got := UnassertedExits(c.name, []byte(c.script)); !slices.Equal(got, c.want) {
			t.Errorf("%s: UnassertedExits = %v; want %v", c.name, got, c.want)
		}
	}
}

// TestScriptsAssertStatedExits: every CLI script that states an exit code
// asserts that exact code.
func TestScriptsAssertStatedExits(t *testing.T) {
	var scripts []string
	for _, pat := range []string{"../../cmd/*/testdata/*.txtar", "../../cmd/*/testdata/*/*.txtar"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	if len(scripts) < 100 {
		t.Fatalf("found %d scripts under cmd/*/testdata; the glob is wrong", len(scripts))
	}
	for _, p := range scripts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if missing := UnassertedExits(p, b); len(missing) > 0 {
			rel, _ := filepath.Rel("../..", p)
			t.Errorf("%s states exit %s but never asserts it (exits N PROGRAM...)", rel, FormatExits(missing))
		}
	}
}
