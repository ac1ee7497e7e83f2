package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/goal"
)

// TestCrashRandomSIGKILL SIGKILLs real artgoal writers at random moments of
// their run, many times over, and checks after every kill that the journal
// is a valid journal holding either the old revision, byte for byte, or
// exactly the writer's new one, and that whatever the dead writers left
// never stops the next one. (TestCrashBetweenTempAndRename places the kill
// exactly between temp write and rename; this one samples every other
// moment too.)
func TestCrashRandomSIGKILL(t *testing.T) {
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	home := t.TempDir()
	walkTo(0)(t, home)
	journal := filepath.Join(home, "goals", "g.json")
	committed, killed := 0, 0
	for i := range iterations {
		before, err := os.ReadFile(journal)
		if err != nil {
			t.Fatal(err)
		}
		prev, err := goal.DecodeJournal(before)
		if err != nil {
			t.Fatal(err)
		}
		cmd := artgoalCmd(t, home, "check", "g", "--rev", fmt.Sprint(prev.Revision), "--item", "0", "--evidence", fmt.Sprintf("note:writer %d", i))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL) // may have exited already
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
			killed++
		case ws.Exited() && ws.ExitStatus() == 0:
		default:
			t.Fatalf("iteration %d: writer ended with %v", i, cmd.ProcessState)
		}

		after, err := os.ReadFile(journal)
		if err != nil {
			t.Fatalf("iteration %d: journal unreadable after the kill: %v", i, err)
		}
		j, err := goal.DecodeJournal(after)
		if err != nil {
			t.Fatalf("iteration %d: torn or invalid journal after the kill: %v", i, err)
		}
		switch j.Revision {
		case prev.Revision:
			if !bytes.Equal(after, before) {
				t.Fatalf("iteration %d: same revision, different bytes", i)
			}
		case prev.Revision + 1:
			committed++
			ev := j.Checklist[0].Evidence
			if len(ev) != len(prev.Checklist[0].Evidence)+1 || ev[len(ev)-1].Text != fmt.Sprintf("writer %d", i) {
				t.Fatalf("iteration %d: new revision without exactly this writer's evidence", i)
			}
			if err := goal.CheckSuccessor(prev, j); err != nil {
				t.Fatalf("iteration %d: stored journal is not a successor: %v", i, err)
			}
		default:
			t.Fatalf("iteration %d: revision %d after %d", i, j.Revision, prev.Revision)
		}
	}
	// Whatever the dead writers left, the next writer succeeds and cleans up.
	last, _ := goal.DecodeJournal(mustRead(t, journal))
	artgoalOK(t, home, "check", "g", "--rev", fmt.Sprint(last.Revision), "--item", "0", "--evidence", "note:survivor")
	entries, _ := os.ReadDir(filepath.Join(home, "goals"))
	for _, e := range entries {
		if e.Name() != "g.json" && e.Name() != "g.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	t.Logf("%d iterations: %d committed, %d killed before or after committing", iterations, committed, killed)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walkTo returns a setup that creates g with one item, then (for n > 0)
// adds evidence to it and seals n phases: g is then at revision 2+n. The
// setup uses the library in process; only the mutation under test runs as
// a separate, killed process.
func walkTo(n int) func(t *testing.T, home string) {
	return func(t *testing.T, home string) {
		t.Helper()
		s := goal.NewStore(home)
		j, err := goal.New("g", "Crash", nil, []string{"a"}, time.Now())
		if err == nil {
			j, err = s.Create(j)
		}
		if err != nil || n == 0 {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if j, err = s.Check("g", j.Revision, "0", goal.Evidence{Type: goal.EvidenceNote, Text: "x"}); err != nil {
			t.Fatal(err)
		}
		for range n {
			if j, err = s.Seal("g", j.Revision, "s", []goal.Evidence{{Type: goal.EvidenceNote, Text: "x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
