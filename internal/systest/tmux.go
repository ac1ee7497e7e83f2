package systest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Deadline bounds every wait for a screen or an exit. It is generous on
// purpose: a wait ends as soon as its condition holds, so a slow machine
// (two cores, -race) costs time, never a false failure.
const Deadline = 90 * time.Second

// Term is a program running on a terminal of its own: a pane of a detached
// tmux session on a private server (its own socket, no user configuration),
// so the program's stdin, stdout and stderr are a real pty and isatty says
// yes. The test reads what a person would see with Screen and History.
//
// The program runs under a small sh that outlives it, so its last screen
// can still be read after it exits and its exit status is known (Wait).
// (tmux's own remain-on-exit is not used: tmux 3.3 can mark a pane dead
// before it has read the program's last output or learnt its status.)
type Term struct {
	t      testing.TB
	tmux   string
	socket string
	status string // the file the wrapper writes the exit status to
}

// TermOptions size and place the terminal.
type TermOptions struct {
	Cols, Rows int      // default 120×30
	Dir        string   // working directory (default: the test's)
	Env        []string // added to the test's environment
}

var termSeq atomic.Int64

// StartTerm runs argv on a new terminal. It skips the test when tmux is
// not on PATH, and kills the tmux server when the test ends.
func StartTerm(t testing.TB, o TermOptions, argv ...string) *Term {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not on PATH")
	}
	if o.Cols == 0 {
		o.Cols = 120
	}
	if o.Rows == 0 {
		o.Rows = 30
	}
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g history-limit 10000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := &Term{t: t, tmux: tmux, socket: fmt.Sprintf("art-test-%d-%d", os.Getpid(), termSeq.Add(1)),
		status: filepath.Join(tmp, "status")}
	args := []string{"-f", conf, "new-session", "-d", "-s", "t",
		"-x", strconv.Itoa(o.Cols), "-y", strconv.Itoa(o.Rows)}
	if o.Dir != "" {
		args = append(args, "-c", o.Dir)
	}
	// The wrapper waits for the program (a trap keeps Ctrl-C, which the
	// terminal sends to both, from ending the wrapper first; the program
	// gets the default action back at exec), records its status ($? is
	// 128+N after signal N), and keeps the pane open. tmux joins a
	// command's words with spaces and hands the line to a shell: quote
	// each word so argv arrives as given.
	wrapper := `trap : INT; f=$1; shift; "$@"; echo $? >"$f.tmp"; mv "$f.tmp" "$f"; exec sleep 86400`
	args = append(args, ShellQuote(append([]string{"sh", "-c", wrapper, "sh", tm.status}, argv...)...))
	// The server starts with this client's environment, and the pane
	// inherits it: the test's PATH (where testscript put the tools), plus
	// o.Env, minus what would tie it to an outer tmux.
	env := []string{"SHELL=/bin/sh"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TMUX" && k != "TMUX_PANE" && k != "SHELL" {
			env = append(env, kv)
		}
	}
	tm.run(append(env, o.Env...), args...)
	t.Cleanup(func() { _ = tm.command(nil, "kill-server").Run() })
	return tm
}

func (tm *Term) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(tm.tmux, append([]string{"-L", tm.socket}, args...)...)
	if env != nil {
		cmd.Env = env
	}
	return cmd
}

func (tm *Term) run(env []string, args ...string) string {
	tm.t.Helper()
	out, err := tm.command(env, args...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Screen is the visible screen, trailing blank lines dropped.
func (tm *Term) Screen() string {
	tm.t.Helper()
	return trimScreen(tm.run(nil, "capture-pane", "-p", "-t", "t"))
}

// History is every line the terminal has shown: the scrollback and the
// screen.
func (tm *Term) History() string {
	tm.t.Helper()
	return trimScreen(tm.run(nil, "capture-pane", "-p", "-S", "-", "-t", "t"))
}

func trimScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// WaitFor polls the screen until ok accepts it and returns that screen;
// past Deadline it fails the test, showing the last screen and saying what
// was awaited.
func (tm *Term) WaitFor(what string, ok func(screen string) bool) string {
	tm.t.Helper()
	return tm.wait(what, tm.Screen, ok)
}

// WaitForHistory is WaitFor over History.
func (tm *Term) WaitForHistory(what string, ok func(history string) bool) string {
	tm.t.Helper()
	return tm.wait(what, tm.History, ok)
}

func (tm *Term) wait(what string, read func() string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(Deadline)
	for {
		s := read()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waited %s for the terminal to show %s; it shows:\n%s", Deadline, what, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Keys types keys on the terminal, in tmux send-keys names ("C-c",
// "Enter", or literal text).
func (tm *Term) Keys(keys ...string) {
	tm.t.Helper()
	tm.run(nil, append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// TTY is the path of the terminal's pty (/dev/pts/N), for a test that
// must hand it to another user or name it to the program.
func (tm *Term) TTY() string {
	tm.t.Helper()
	return strings.TrimSpace(tm.run(nil, "display-message", "-p", "-t", "t", "#{pane_tty}"))
}

// Wait waits for the program to exit and returns its exit status, or
// 128+N when signal N killed it.
func (tm *Term) Wait() int {
	tm.t.Helper()
	var code int
	tm.wait("the program exit", func() string {
		b, err := os.ReadFile(tm.status)
		if err != nil {
			return "(running)"
		}
		return string(b)
	}, func(s string) bool {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		code = n
		return err == nil
	})
	return code
}

// ShellQuote joins words into a POSIX shell command line that a shell
// splits back into exactly these words, expanding nothing.
func ShellQuote(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%") == "" {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
