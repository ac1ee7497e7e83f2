//go:build linux

package stage

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// start runs NewChild and Start on a locked thread (the child's
// parent-death signal is tied to it) and waits for a started program.
func start(t *testing.T, s *Spec, spoil func(*Child)) (status unix.WaitStatus, err error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	null, nerr := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if nerr != nil {
		t.Fatal(nerr)
	}
	defer null.Close()
	fd := int(null.Fd())
	c, err := NewChild(s, [3]int{fd, fd, fd}, -1)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if spoil != nil {
		spoil(c)
	}
	pid, err := c.Start()
	if err != nil {
		return 0, err
	}
	if _, werr := unix.Wait4(pid, &status, 0, nil); werr != nil {
		t.Fatal(werr)
	}
	return status, nil
}

// A child that fails reports the step that failed and its errno, is
// reaped, and nothing of the program runs: execve's own failures (step
// "exec": missing, not executable, a directory) and any restriction the
// kernel refuses in the child (a limit, the Landlock ruleset, a seccomp
// program) — each judged from outside by the marker the program would
// have written.
func TestChildFailures(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := func() *Spec {
		return &Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "touch " + marker}, NNP: true}
	}
	badFilter := make([]byte, 8) // one instruction, opcode 0: not a valid program end
	for _, c := range []struct {
		name  string
		spec  func() *Spec
		spoil func(*Child)
		step  string
		errno syscall.Errno
	}{
		{"missing program", func() *Spec { s := sh(); s.Path = filepath.Join(dir, "missing"); return s }, nil, "exec", unix.ENOENT},
		{"not executable", func() *Spec { s := sh(); s.Path = noexec; return s }, nil, "exec", unix.EACCES},
		{"directory", func() *Spec { s := sh(); s.Path = dir; return s }, nil, "exec", unix.EACCES},
		{"bad limit", func() *Spec {
			s := sh()
			s.Rlimits = []Rlimit{{Name: "nofile", Resource: unix.RLIMIT_NOFILE, Value: 64}}
			return s
		}, func(c *Child) { c.rlimits[0].resource = 4096 }, "rlimit nofile", unix.EINVAL},
		{"bad address-space limit", func() *Spec {
			s := sh()
			s.Rlimits = []Rlimit{{Name: "nofile", Resource: unix.RLIMIT_NOFILE, Value: 64}, {Name: "as", Resource: unix.RLIMIT_AS, Value: 1 << 40}}
			return s
		}, func(c *Child) { c.rlimits[1].resource = 4096 }, "rlimit as", unix.EINVAL},
		{"not a ruleset", sh, func(c *Child) {
			fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			c.ruleset = fd
		}, "landlock", unix.EBADFD},
		{"bad seccomp program", func() *Spec { s := sh(); s.Filters = [][]byte{badFilter}; return s }, nil, "seccomp", unix.EINVAL},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := start(t, c.spec(), c.spoil)
			var se *Error
			if !errors.As(err, &se) || se.Step != c.step || !errors.Is(se.Err, c.errno) {
				t.Fatalf("Start = %v; want step %q, %v", err, c.step, c.errno)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran")
			}
			if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
				t.Fatalf("wait4 after the failure: %v; want ECHILD (the child reaped)", err)
			}
		})
	}
}

// A spec that cannot be prepared fails in the parent, before any fork.
func TestNewChildRefuses(t *testing.T) {
	for _, c := range []struct {
		name, step string
		spec       Spec
	}{
		{"NUL in path", "exec", Spec{Path: "/bin/s\x00h", Argv: []string{"sh"}}},
		{"NUL in env", "exec", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Env: []string{"A=\x00"}}},
		{"unknown limit", "rlimit bogus", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Rlimits: []Rlimit{{Name: "bogus", Resource: 4096, Value: 1}}}},
		{"malformed filter", "seccomp", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Filters: [][]byte{make([]byte, 12)}}},
		{"trees without descriptors", "landlock", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Landlock: max(LandlockABI(), 1), RW: []string{"/tmp"}}},
		{"capability out of range", "capabilities", Spec{Path: "/bin/sh", Argv: []string{"sh"}, DropCaps: true, KeepCaps: []int{64}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewChild(&c.spec, [3]int{0, 1, 2}, -1)
			var se *Error
			if !errors.As(err, &se) || se.Step != c.step {
				t.Fatalf("NewChild = %v; want a refusal at step %q", err, c.step)
			}
		})
	}
}

// The descriptors the program gets are exactly the three asked for (one
// of them twice), and none of the parent's others, even those the test
// process holds without close-on-exec.
func TestChildDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	s := &Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "ls /proc/self/fd; echo err >&2"}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := NewChild(s, [3]int{int(null.Fd()), int(w.Fd()), int(w.Fd())}, -1)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := c.Start()
	c.Close()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4096)
	n, _ := readFull(int(r.Fd()), out)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("wait: %v status %v", err, ws)
	}
	// ls lists 0 1 2 and its own directory descriptor (3).
	if got := strings.Fields(string(out[:n])); strings.Join(got, " ") != "0 1 2 3 err" {
		t.Errorf("program saw descriptors and stderr %q; want 0 1 2 3 (ls's own) and err", got)
	}
}
