//go:build linux

package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// A descriptor artexec inherited without close-on-exec (a shell's
// `exec 10<file`, a CI agent's pipe) never reaches the program, in any
// start mode the CLI has: the program lists /proc/self/fd and holds 0-2
// and ls's own directory descriptor, nothing else. testscript cannot hand
// a script's command an extra descriptor, so this runs the artexec that
// testscript.Main put on PATH with exec.Cmd.ExtraFiles: fd 3 the write end
// of a pipe, fd 10 /dev/null.
func TestInheritedFDsNotPassed(t *testing.T) {
	artexec, err := exec.LookPath("artexec")
	if err != nil {
		t.Fatalf("artexec not on PATH (testscript.Main puts it there): %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	extra := make([]*os.File, 8) // fds 3..10; nil: closed in the child
	extra[0], extra[7] = w, null

	// The control: a program started the same way without artexec gets
	// both descriptors, so the listing below would show a leak.
	ls := exec.Command("ls", "/proc/self/fd")
	ls.ExtraFiles = extra
	out, err := ls.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); !slices.Contains(got, "3") || !slices.Contains(got, "10") {
		t.Fatalf("control: ls got fds %v; want 3 and 10 among them, or this test sees nothing", got)
	}

	caps := execx.Probe()
	for _, m := range []struct {
		name  string
		flags []string
		skip  string
	}{
		{"direct", nil, ""},
		{"exec shim", []string{"--open-files", "64"}, ""},
		{"landlock", []string{"--isolation", "landlock"}, available(caps, execx.IsolationLandlock)},
		{"strict", []string{"--isolation", "strict"}, available(caps, execx.IsolationStrict)},
	} {
		t.Run(m.name, func(t *testing.T) {
			if m.skip != "" {
				t.Skip(m.skip)
			}
			args := append([]string{"run", "--timeout", "1m"}, m.flags...)
			cmd := exec.Command(artexec, append(args, "--", "ls", "/proc/self/fd")...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "GORACE="+systest.NoExitSleep())
			cmd.ExtraFiles = extra
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("artexec %s: %v; stderr: %s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
			}
			var res execx.Result
			if err := jsonx.Unmarshal(out, "result", &res); err != nil {
				t.Fatalf("Result %s: %v", out, err)
			}
			if got := strings.Fields(res.Output); res.Status != execx.StatusSucceeded || strings.Join(got, " ") != "0 1 2 3" {
				t.Errorf("status %s, the program's fds %v; want succeeded, [0 1 2 3]", res.Status, got)
			}
		})
	}
}

// available is why backend b cannot run here, or "".
func available(caps execx.Capabilities, b execx.Isolation) string {
	for _, bc := range caps.Backends {
		if bc.Backend == b && bc.Available {
			return ""
		}
	}
	return "isolation " + string(b) + " is not available here"
}
