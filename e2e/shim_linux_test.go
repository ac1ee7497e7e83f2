//go:build linux

package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// supervisorComm runs `artexec run` from exe with isolation iso and
// returns the name (comm) of the task's parent, its supervisor:
// "artexec-shim" when the minimal binary was started, "exe" when the
// runner re-executed itself (/proc/self/exe).
func supervisorComm(t *testing.T, exe, iso string) string {
	t.Helper()
	ws := t.TempDir()
	out, err := exec.Command(exe, "run", "--workspace", ws, "--isolation", iso, "--",
		"sh", "-c", `cat /proc/$PPID/comm`).Output()
	if err != nil {
		t.Fatalf("artexec run --isolation %s: %v\n%s", iso, err, out)
	}
	var res struct {
		Status string `json:"status"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "succeeded" {
		t.Fatalf("artexec run --isolation %s: %v\n%s", iso, err, out)
	}
	return strings.TrimSpace(res.Output)
}

// isolations are the modes this kernel can run (strict needs user
// namespaces, landlock Landlock).
func isolations(t *testing.T, exe string) []string {
	out, err := exec.Command(exe, "isolation").Output()
	if err != nil {
		t.Fatalf("artexec isolation: %v", err)
	}
	var caps struct {
		Backends []struct {
			Backend   string `json:"backend"`
			Available bool   `json:"available"`
		} `json:"backends"`
	}
	if err := json.Unmarshal(out, &caps); err != nil {
		t.Fatal(err)
	}
	var isos []string
	for _, b := range caps.Backends {
		if b.Available && b.Backend != "seatbelt" {
			isos = append(isos, b.Backend)
		}
	}
	return isos
}

// TestShimBesideTool: the installed artexec runs every task under the
// minimal artexec-shim beside it, in every isolation mode.
func TestShimBesideTool(t *testing.T) {
	exe := filepath.Join(binDir, "artexec")
	for _, iso := range isolations(t, exe) {
		if got := supervisorComm(t, exe, iso); got != "artexec-shim" {
			t.Errorf("isolation %s: the task's supervisor is %q, want artexec-shim", iso, got)
		}
	}
}

// TestShimUntrustedRefused plants an artexec-shim the runner must not
// trust beside a copy of artexec: writable by others, in a directory
// writable by others, a symlink, owned by another user. Each planted
// file is a script that would leave a mark; the runner must never run it
// and fall back to re-executing itself, so the task still succeeds.
func TestShimUntrustedRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the foreign-owner case is skipped")
	}
	real := filepath.Join(binDir, "artexec")
	cases := []struct {
		name  string
		plant func(t *testing.T, dir, script string)
	}{
		{"group and other writable", func(t *testing.T, dir, script string) {
			writeScript(t, filepath.Join(dir, "artexec-shim"), script, 0o777)
		}},
		{"group writable", func(t *testing.T, dir, script string) {
			writeScript(t, filepath.Join(dir, "artexec-shim"), script, 0o775)
		}},
		{"directory writable by others", func(t *testing.T, dir, script string) {
			writeScript(t, filepath.Join(dir, "artexec-shim"), script, 0o755)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, dir, script string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			writeScript(t, target, script, 0o755)
			if err := os.Symlink(target, filepath.Join(dir, "artexec-shim")); err != nil {
				t.Fatal(err)
			}
		}},
		{"owned by another user", func(t *testing.T, dir, script string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			p := filepath.Join(dir, "artexec-shim")
			writeScript(t, p, script, 0o755)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"not executable", func(t *testing.T, dir, script string) {
			writeScript(t, filepath.Join(dir, "artexec-shim"), script, 0o644)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			exe := filepath.Join(dir, "artexec")
			copyFile(t, real, exe)
			mark := filepath.Join(t.TempDir(), "ran")
			c.plant(t, dir, "#!/bin/sh\ntouch "+mark+"\nexit 1\n")
			if got := supervisorComm(t, exe, "none"); got != "exe" {
				t.Errorf("the task's supervisor is %q, want the runner itself (exe)", got)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Error("the planted artexec-shim was run")
			}
		})
	}
	// The control: the same copy with the real shim beside it uses it.
	t.Run("trusted", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(dir, "artexec")
		copyFile(t, real, exe)
		copyFile(t, filepath.Join(binDir, "artexec-shim"), filepath.Join(dir, "artexec-shim"))
		if got := supervisorComm(t, exe, "none"); got != "artexec-shim" {
			t.Errorf("the task's supervisor is %q, want artexec-shim", got)
		}
	})
}

func writeScript(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
