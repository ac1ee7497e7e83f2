package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
)

// artgoalCmd runs the artgoal that testscript.Main put on PATH (this test
// binary, re-executed as artgoal) against home.
func artgoalCmd(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("artgoal")
	if err != nil {
		t.Fatalf("artgoal not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ART_HOME="+home, "GORACE="+systest.NoExitSleep())
	cmd.Dir = home
	return cmd
}

// artgoalOK runs artgoal and fails the test unless it exits 0.
func artgoalOK(t *testing.T, home string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := artgoalCmd(t, home, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("artgoal %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestRaceTenWriters starts ten real artgoal processes that all put a
// successor of the same revision, released at the same moment: each reads
// its document from its own FIFO, so all ten are running and blocked until
// the test writes the ten documents. Exactly one must win; the other nine
// must exit 3 (stale revision) and leave no trace.
func TestRaceTenWriters(t *testing.T) {
	const writers = 10
	home := t.TempDir()
	artgoalOK(t, home, "new", "g", "--title", "Race", "--check", "a")
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for round := 1; round <= rounds; round++ {
		rev := int64(round)
		base, err := goal.DecodeJournal(artgoalOK(t, home, "show", "g"))
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			code           int
			stdout, stderr string
		}
		results := make([]result, writers)
		cmds := make([]*exec.Cmd, writers)
		fifos := make([]string, writers)
		var wg sync.WaitGroup
		for i := range writers {
			fifos[i] = filepath.Join(home, fmt.Sprintf("doc-%d-%d", round, i))
			if err := syscall.Mkfifo(fifos[i], 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmds[i] = artgoalCmd(t, home, "put", "g", "--rev", fmt.Sprint(rev), "--file", fifos[i])
			cmds[i].Stdout, cmds[i].Stderr = &stdout, &stderr
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := cmds[i].Wait()
				results[i] = result{cmds[i].ProcessState.ExitCode(), stdout.String(), stderr.String()}
				if err != nil && cmds[i].ProcessState.ExitCode() < 0 {
					results[i].code = -1
				}
			}()
		}
		// Release all ten: each document appends a different note. A
		// writer that died before opening its FIFO would block the open
		// for ever, so the writes run beside a watchdog.
		released := make(chan error, writers)
		for i := range writers {
			doc := base.Clone()
			doc.Checklist[0].Evidence = append(doc.Checklist[0].Evidence, goal.Evidence{Type: goal.EvidenceNote, Text: fmt.Sprintf("writer %d", i)})
			data, err := doc.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			go func() { released <- os.WriteFile(fifos[i], data, 0o600) }()
		}
		timeout := time.After(time.Minute)
		for range writers {
			select {
			case err := <-released:
				if err != nil {
					t.Fatal(err)
				}
			case <-timeout:
				for _, f := range fifos { // unblock the stuck opens
					if r, err := os.OpenFile(f, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
						defer r.Close()
					}
				}
				t.Fatalf("round %d: a writer never read its document", round)
			}
		}
		wg.Wait()

		winners, stale := 0, 0
		winner := -1
		for i, r := range results {
			switch r.code {
			case exitcode.OK:
				winners++
				winner = i
			case exitcode.Conflict:
				stale++
				if !strings.Contains(r.stderr, fmt.Sprintf("stale revision %d (the stored revision is %d)", rev, rev+1)) || r.stdout != "" {
					t.Errorf("round %d writer %d: exit 3 with stdout %q stderr %q; want only a stale-revision error", round, i, r.stdout, r.stderr)
				}
			default:
				t.Errorf("round %d writer %d: exit %d: %s", round, i, r.code, r.stderr)
			}
		}
		if winners != 1 || stale != writers-1 {
			t.Fatalf("round %d: %d winners, %d stale; want 1 and %d", round, winners, stale, writers-1)
		}
		disk, err := os.ReadFile(filepath.Join(home, "goals", "g.json"))
		if err != nil {
			t.Fatal(err)
		}
		if string(disk) != results[winner].stdout {
			t.Errorf("round %d: the stored journal is not the winner's output", round)
		}
		j, err := goal.DecodeJournal(disk)
		if err != nil {
			t.Fatal(err)
		}
		ev := j.Checklist[0].Evidence
		if j.Revision != rev+1 || len(ev) != round || ev[round-1].Text != fmt.Sprintf("writer %d", winner) {
			t.Errorf("round %d: revision %d, %d evidence, last %q; want %d, %d, writer %d", round, j.Revision, len(ev), ev[len(ev)-1].Text, rev+1, round, winner)
		}
	}
}
