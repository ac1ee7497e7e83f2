package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestStatusWatchOnATerminal runs `artq status --watch` on a real terminal
// (a tmux pane) and changes the queue under it from the test: the screen
// must follow, as one table redrawn in place, never a scroll of old ones;
// Ctrl-C typed on the terminal ends it with 130. The waits are for what the
// screen shows, each bounded by systest.Deadline, never for a time.
func TestStatusWatchOnATerminal(t *testing.T) {
	bin, err := exec.LookPath("artq") // installed by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "q")
	ws := t.TempDir()
	must := func(args ...string) {
		t.Helper()
		if out, err := artqCmd(dir, args...).CombinedOutput(); err != nil {
			t.Fatalf("artq %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	must("enqueue", "--id", "first", "--", "true")

	term := systest.StartTerm(t, systest.TermOptions{Cols: 120, Rows: 30, Env: []string{"GORACE=" + systest.NoExitSleep()}},
		bin, "--dir", dir, "status", "--watch", "--interval", "100ms")
	row := func(id, state, attempts string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + id + `\s+` + state + `\s+` + attempts + `\s`)
	}
	// one redrawn frame: the header once, at the top, and the table's head.
	head := regexp.MustCompile(`(?m)^ID\s+STATE\s+ATTEMPTS\s+PROGRAM\s+UPDATED\s+LAST$`)
	frame := func(s string) bool {
		return strings.HasPrefix(s, "Every 100ms: artq status") &&
			strings.Count(s, "artq status") == 1 && len(head.FindAllString(s, -1)) == 1
	}

	term.WaitFor("the queued task", func(s string) bool {
		return frame(s) && row("first", "queued", "0/1").MatchString(s)
	})

	// A task enqueued by someone else appears.
	must("enqueue", "--id", "second", "--", "sh", "-c", "exit 3")
	term.WaitFor("the second task", func(s string) bool {
		return frame(s) && row("first", "queued", "0/1").MatchString(s) && row("second", "queued", "0/1").MatchString(s)
	})

	// A worker drains the queue: both rows change in place.
	must("work", "--drain", "--allow", "true", "--allow", "sh", "--workspace", ws)
	s := term.WaitFor("both tasks finished", func(s string) bool {
		return frame(s) && row("first", "succeeded", "1/1").MatchString(s) && row("second", "failed", "1/1").MatchString(s)
	})
	if strings.Contains(s, "queued") {
		t.Errorf("an old frame is still on the screen:\n%s", s)
	}
	if !strings.Contains(s, "exit 3") {
		t.Errorf("the failed task's row does not say how it ended:\n%s", s)
	}

	term.Keys("C-c")
	if code := term.Wait(); code != 130 {
		t.Errorf("status --watch after Ctrl-C on its terminal: exit %d; want 130\n%s", code, term.History())
	}
}
