//go:build linux

package shim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
	for _, c := range []struct {
		name, path string
		filters    [][]byte
		code       int
		msg        string
	}{
		{"missing", filepath.Join(dir, "missing"), nil, exitcode.ProgramNotFound, "start " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"not executable", noexec, nil, exitcode.Refused, "permission denied"},
		{"seccomp refused", "/bin/sh", [][]byte{make([]byte, 8)}, exitcode.Internal, "isolation: seccomp: invalid argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Spec{Stage: stage.Spec{Path: c.path, Argv: []string{"sh", "-c", "touch " + marker}, NNP: true, Filters: c.filters}}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, err := startRestricted(s, &taskFDs{stdin: fd, out: fd, err: fd, cgroup: -1})
			if err == nil || exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("startRestricted = %v (exit %d); want exit %d with %q", err, exitcode.Of(err), c.code, c.msg)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran")
			}
		})
	}
}
