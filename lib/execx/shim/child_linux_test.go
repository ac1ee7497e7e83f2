//go:build linux

package shim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// A task whose process fails before its program runs gets the error a
// run reports: execve's own failures are the program's (127 missing, 126
// not executable), any other step is an isolation failure of the tool
// (125) naming the step; nothing of the program ran.
func TestStartRestrictedErrors(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fd := int(null.Fd())
	tree := filepath.Join(dir, "tree")
	for _, c := range []struct {
		name, path string
		filters    [][]byte
		code       int
		msg        string
		view       bool // in a view whose writable tree was swapped
	}{
		{"missing", filepath.Join(dir, "missing"), nil, exitcode.ProgramNotFound, "start " + filepath.Join(dir, "missing") + ": no such file or directory", false},
		{"not executable", noexec, nil, exitcode.Refused, "permission denied", false},
		{"seccomp refused", "/bin/sh", [][]byte{make([]byte, 8)}, exitcode.Internal, "isolation: seccomp: invalid argument", false},
		{"view tree swapped", "/bin/sh", nil, exitcode.Internal, "isolation: mount view: bind " + tree + ": replaced since the runner opened it", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Spec{Stage: stage.Spec{Path: c.path, Argv: []string{"sh", "-c", "touch " + marker}, NNP: true, Filters: c.filters}}
			var rw []int
			if c.view {
				if os.Geteuid() != 0 {
					t.Skip("a mount namespace needs root")
				}
				rw = swappedTree(t, tree)
				s.StageView = &stage.View{ReadOnly: true, RW: []string{tree}, Cwd: "/"}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, err := startRestricted(s, &taskFDs{stdin: fd, out: fd, err: fd, rw: rw, cgroup: -1})
			if err == nil || exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("startRestricted = %v (exit %d); want exit %d with %q", err, exitcode.Of(err), c.code, c.msg)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran")
			}
		})
	}
}

// swappedTree makes tree, holds it open as a runner does, and puts
// another directory at its path.
func swappedTree(t *testing.T, tree string) []int {
	t.Helper()
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(tree, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := os.Rename(tree, tree+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	return []int{fd}
}
