package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestRunProgressOnATerminal runs `artagent run` with stderr on a real
// terminal (a tmux pane) and stdout into a file: one progress line per step
// must reach the terminal as each step ends, not when the run does, and the
// AgentEvent JSON must go to the file and nowhere else. Step 2 runs a tool
// that waits for a file the test creates only after it has seen step 1 on
// the screen, so "live" is proved by order, not by timing. (That progress
// stays off a stderr that is not a terminal is the `! stderr .` of the
// run_* and outcome_* scripts.) While step 2's tool waits, the terminal
// shows a "running… Ns" line for it, cleared before its own line.
func TestRunProgressOnATerminal(t *testing.T) {
	bin, err := exec.LookPath("artagent") // installed by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "a.txt"), "old\n")
	write(filepath.Join(dir, "script.jsonl"), `{"action":"replace_text","path":"a.txt","old":"old","new":"new"}
{"action":"run_tool","program":"sh","args":["-c","while [ ! -e go-on ]; do sleep 0.02; done; echo released"]}
{"action":"verify"}
{"action":"finish","summary":"done"}
`)
	term := systest.StartTerm(t, systest.TermOptions{Cols: 160, Rows: 30, Dir: dir, Env: []string{"GORACE=" + systest.NoExitSleep()}},
		"sh", "-c", `exec "$0" "$@" >events.jsonl`, bin,
		"run", "--workspace", "ws", "--task", "edit a.txt", "--provider", "mock", "--mock-script", "script.jsonl",
		"--allow", "sh", "--verify", "grep -q new a.txt")

	s := term.WaitFor("step 1's progress line", func(s string) bool {
		return strings.Contains(s, "artagent: step 1/30 replace_text a.txt: edited line 1; debt open")
	})
	if strings.Contains(s, "step 2/30 run_tool sh -c while [ ! -e go-on ]; do sleep 0.02; done; echo released:") {
		t.Fatalf("step 2 reported before its tool could finish:\n%s", s)
	}
	// While step 2's tool waits, the terminal shows it running.
	term.WaitFor("step 2's running line", func(s string) bool {
		return strings.Contains(s, "artagent: step 2/30 run_tool sh") && strings.Contains(s, "running… ")
	})
	write(filepath.Join(ws, "go-on"), "")

	if code := term.Wait(); code != 0 {
		t.Errorf("artagent run: exit %d; want 0 (a verified finish)\n%s", code, term.History())
	}
	h := term.History()
	for _, want := range []string{
		`(?m)^artagent: step 1/30 replace_text a\.txt: edited line 1; debt open$`,
		`(?m)^artagent: step 2/30 run_tool sh\b.*; debt open$`,
		`(?m)^artagent: step 3/30 verify: verify passed$`,
		`(?m)^artagent: step 4/30 finish: finished$`,
		`(?m)^artagent: finished after 4 steps, 1 edit, verified$`,
	} {
		if !regexp.MustCompile(want).MatchString(h) {
			t.Errorf("the terminal shows no line matching %s:\n%s", want, h)
		}
	}
	if strings.Contains(h, `{"`) {
		t.Errorf("JSON reached the terminal; it belongs on stdout:\n%s", h)
	}

	// stdout, not a terminal, got the events: JSON Lines ending in the result.
	data, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var last struct{ Type, Status string }
	for _, line := range lines {
		if err := json.Unmarshal([]byte(line), &last); err != nil {
			t.Fatalf("stdout line is not JSON: %v: %s", err, line)
		}
	}
	if last.Type != "result" || last.Status != "finished" {
		t.Errorf("stdout ends with %+v; want the result, finished:\n%s", last, data)
	}
	if strings.Contains(string(data), "artagent: step") {
		t.Errorf("progress lines reached stdout:\n%s", data)
	}
}
