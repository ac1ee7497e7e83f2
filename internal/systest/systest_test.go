package systest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestShellQuote(t *testing.T) {
	words := []string{"plain", "", "two words", "it's", `"$HOME"`, "a;b", "x=y", "-n", "*", "~"}
	// A shell splits the quoted line back into exactly these words.
	got, err := exec.Command("sh", "-c", "set -- "+ShellQuote(words...)+`; for w in "$@"; do printf '[%s]' "$w"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "[" + strings.Join(words, "][") + "]"
	if string(got) != want {
		t.Errorf("ShellQuote round trip = %s; want %s", got, want)
	}
}

func TestTree(t *testing.T) {
	dir := t.TempDir()
	if got := Tree(t, filepath.Join(dir, "missing")); got != "" {
		t.Errorf("Tree(missing) = %q; want empty", got)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("one"), 0o600)
	before := Tree(t, dir)
	for _, change := range []func(){
		func() { os.WriteFile(filepath.Join(dir, "a"), []byte("two"), 0o600) },
		func() { os.Chmod(filepath.Join(dir, "a"), 0o644) },
		func() { os.WriteFile(filepath.Join(dir, "b"), nil, 0o600) },
		func() { os.Symlink("a", filepath.Join(dir, "l")) },
	} {
		change()
		after := Tree(t, dir)
		if after == before {
			t.Errorf("Tree did not see a change:\n%s", after)
		}
		before = after
	}
}

func TestTerm(t *testing.T) {
	term := StartTerm(t, TermOptions{Cols: 40, Rows: 5, Env: []string{"GREETING=hello there"}},
		"sh", "-c", `[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo "$GREETING, a terminal"; read line; echo "got $line"; exit 3`)
	term.WaitFor("the greeting", func(s string) bool { return strings.Contains(s, "hello there, a terminal") })
	term.Keys("typed", "Enter")
	if code := term.Wait(); code != 3 {
		t.Errorf("exit status %d; want 3", code)
	}
	if h := term.History(); !strings.Contains(h, "got typed") {
		t.Errorf("the terminal shows:\n%s\nwant the typed line echoed", h)
	}
}

func TestTermSignal(t *testing.T) {
	term := StartTerm(t, TermOptions{}, "sh", "-c", `echo ready; exec sleep 60`)
	term.WaitFor("ready", func(s string) bool { return strings.Contains(s, "ready") })
	term.Keys("C-c")
	if code := term.Wait(); code != 130 {
		t.Errorf("exit status after Ctrl-C %d; want 130 (SIGINT)", code)
	}
}
