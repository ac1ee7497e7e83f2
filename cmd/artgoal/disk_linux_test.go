package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestUnwritable puts the goal journals on a tmpfs that is full (every page
// taken by ballast) or read-only, and proves that every
// mutation fails at once with exit 125 and one line naming the goal's file
// and the cause; that the journals, lock files and directory are exactly as
// they were (no temp file left to trip the next run); that reads still
// work; and that the same mutation succeeds once space returns or the
// filesystem is writable again. Root only (they mount); skipped otherwise.
func TestUnwritable(t *testing.T) {
	for _, f := range systest.Faults {
		t.Run(f.Name, func(t *testing.T) { testUnwritable(t, f) })
	}
}

func testUnwritable(t *testing.T, fault systest.Fault) {
	m := systest.MountTmpfs(t, 256<<10)
	home := m.Path("home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	goals := filepath.Join(home, "goals")
	run := func(args ...string) (int, string) {
		t.Helper()
		out, err := artgoalCmd(t, home, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	// A goal with history: revision 3, a sealed receipt, evidence.
	artgoalOK(t, home, "new", "g", "--title", "ship it", "--check", "tests pass", "--check", "docs written")
	artgoalOK(t, home, "check", "g", "--rev", "1", "--item", "0", "--evidence", "note:green")
	artgoalOK(t, home, "receipt", "g", "--rev", "2", "--summary", "framed", "--evidence", "note:agreed")
	successor := filepath.Join(t.TempDir(), "g.json") // a legitimate successor: itself
	if err := os.WriteFile(successor, artgoalOK(t, home, "show", "g"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := systest.Tree(t, goals)

	fault.Break(m)
	mutations := [][]string{
		{"check", "g", "--rev", "3", "--item", "1", "--evidence", "note:written"},
		{"receipt", "g", "--rev", "3", "--summary", "explored", "--evidence", "note:looked"},
		{"put", "g", "--rev", "3", "--file", successor},
	}
	for _, args := range mutations {
		code, out := run(args...)
		if code != 125 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "artgoal: error: ") ||
			!strings.Contains(out, filepath.Join(goals, "g.")) || !strings.Contains(out, fault.Cause) {
			t.Errorf("artgoal %s: exit %d, %q; want 125 and one line naming %s (or its lock) and %q",
				strings.Join(args, " "), code, out, filepath.Join(goals, "g.json"), fault.Cause)
		}
	}
	// A new goal fails the same way and leaves no journal behind (its lock
	// file may stay: it is empty and is what the next attempt locks).
	if code, out := run("new", "h", "--title", "later"); code != 125 || strings.Count(out, "\n") != 1 || !strings.Contains(out, fault.Cause) {
		t.Errorf("artgoal new: exit %d, %q; want 125 and one line saying %q", code, out, fault.Cause)
	}
	if _, err := os.Lstat(filepath.Join(goals, "h.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed new left h.json (%v)", err)
	}
	os.Remove(filepath.Join(goals, "h.lock")) // if it was made: compare the rest
	systest.SameTree(t, "mutations that could not be written", goals, before)
	for _, args := range [][]string{{"show", "g"}, {"list"}, {"validate", filepath.Join(goals, "g.json")}} {
		if code, out := run(args...); code != 0 {
			t.Errorf("artgoal %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
	}

	fault.Mend(m)
	artgoalOK(t, home, mutations[0]...)
	artgoalOK(t, home, "receipt", "g", "--rev", "4", "--summary", "explored", "--evidence", "note:looked")
	artgoalOK(t, home, "new", "h", "--title", "later")
	if out := string(artgoalOK(t, home, "show", "g")); !strings.Contains(out, `"revision": 5`) || !strings.Contains(out, `"text": "written"`) {
		t.Errorf("after recovery g is:\n%s\nwant revision 5 with the new evidence", out)
	}
	if left := temps(t, home); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}
