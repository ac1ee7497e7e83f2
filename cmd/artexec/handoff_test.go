package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBin runs bin with args (stdin from in) and returns its stdout,
// stderr and exit code.
func runBin(t *testing.T, env []string, in string, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return out.String(), errb.String(), code
}

// The artexec binary runs run's plain forms itself and hands every other
// invocation, whole (arguments, environment, stdin, exit code), to the
// artexec-cli installed beside it; without one, those invocations fail
// with a message naming it, and the plain forms still run.
func TestHandOffToCLI(t *testing.T) {
	bin := buildArtexec(t, true)
	ws := t.TempDir()
	// PATH without any other artexec-cli: only the one beside counts.
	env := append(os.Environ(), "PATH=/usr/bin:/bin")
	manifest := `{"apiVersion":"art/v1alpha1","kind":"Task","id":"t1","program":"true"}`
	for _, c := range []struct {
		name     string
		in       string
		args     []string
		code     int
		out, err string // substrings; "" checks nothing
	}{
		{"help", "", []string{"--help"}, 0, "Usage: artexec <command>", ""},
		{"other command", "", []string{"isolation", "-o", "json"}, 0, `"backends"`, ""},
		{"declined run form", "", []string{"run", "-o", "json", "--workspace", ws, "--", "true"}, 0, `"status":"succeeded"`, ""},
		{"manifest on stdin", manifest, []string{"run", "--workspace", ws, "--allow", "true", "--manifest", "-"}, 0, `"task_id":"t1"`, ""},
		{"usage error", "", []string{"run", "--bogus", "--", "true"}, 2, "", "artexec: error: unknown flag --bogus"},
		{"exit code passes", "", []string{"run", "-o", "json", "--workspace", ws, "--", "false"}, 1, `"exit_code":1`, ""},
		{"plain run", "", []string{"run", "--workspace", ws, "--", "true"}, 0, `"status":"succeeded"`, ""},
		// network allow's proxy is not linked into artexec: artexec-cli
		// runs these, a destination given or not.
		{"network allow", "", []string{"run", "--workspace", ws, "--allow-host", "example.com", "--", "true"}, 0, `"network":{"mode":"allow"`, ""},
		{"network allow, no destination", "", []string{"run", "--workspace", ws, "--network", "allow", "--", "true"}, 0, `"network":{"mode":"allow"`, ""},
		{"network allow, bad destination", "", []string{"run", "--workspace", ws, "--allow-host", "a b", "--", "true"}, 2, "", "--allow-host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runBin(t, env, c.in, bin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
				t.Errorf("artexec %q: exit %d, stdout %.300q, stderr %.300q; want exit %d, stdout with %q, stderr with %q",
					c.args, code, out, errs, c.code, c.out, c.err)
			}
		})
	}

	// artexec alone: the plain run works, the rest names what is missing.
	alone := filepath.Join(t.TempDir(), "artexec")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runBin(t, env, "", alone, "run", "--workspace", ws, "--", "true"); code != 0 || !strings.Contains(out, `"status":"succeeded"`) {
		t.Errorf("artexec alone, plain run: exit %d, stdout %q, stderr %q; want 0 and a Result", code, out, errs)
	}
	wantErr := "artexec: error: artexec-cli: file does not exist in " + filepath.Dir(alone) + " nor on PATH\n" +
		"artexec: hint: artexec's commands other than a plain run, and runs with network allow, are in artexec-cli, installed beside artexec (make install)\n"
	for _, args := range [][]string{{"--help"}, {"run", "--workspace", ws, "--network", "allow", "--", "true"}} {
		out, errs, code := runBin(t, env, "", alone, args...)
		if code != 125 || errs != wantErr || out != "" {
			t.Errorf("artexec alone %q: exit %d, stdout %q, stderr %q; want 125, nothing on stdout and %q", args, code, out, errs, wantErr)
		}
	}
}
