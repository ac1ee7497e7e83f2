//go:build linux

package stage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// launch starts l on a locked thread and returns what the program wrote
// to its descriptor fd (a pipe put there) and how it exited.
func launch(t *testing.T, l *Launch, fd int) (string, unix.WaitStatus, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for len(l.Files) <= fd {
		l.Files = append(l.Files, -1)
	}
	l.Files[fd] = int(w.Fd())
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := NewLaunch(l)
	if err != nil {
		w.Close()
		return "", 0, err
	}
	defer c.Close()
	pid, err := c.Start()
	w.Close()
	if err != nil {
		return "", 0, err
	}
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, rerr := r.Read(buf)
		out.Write(buf[:n])
		if rerr != nil {
			break
		}
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	return out.String(), ws, nil
}

func sh(t *testing.T, script string) *Launch {
	// bash: dash redirects descriptors up to 9 only.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip(err)
	}
	return &Launch{Path: bash, Argv: []string{"bash", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
}

// A launched program gets exactly the descriptors asked for, wherever
// they came from (a source below its target, a target left closed among
// them), a process group of its own and the working directory.
func TestLaunchDescriptorsGroupDir(t *testing.T) {
	dir := t.TempDir()
	l := sh(t, `for n in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do [ -e /proc/self/fd/$n ] && printf "open $n " >&15; done
		read pid comm state ppid pgrp rest < /proc/self/stat
		[ "$pid" = "$pgrp" ] && printf "group " >&15
		printf "%s" "$PWD" >&15`)
	l.Dir = dir
	// Descriptor 15 is a pipe whose number is lower than 15 here, and
	// every other target is closed: moved out of the way, it must not
	// land on a target that is closed after.
	out, ws, err := launch(t, l, 15)
	if err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("launch: %v, %v", err, ws)
	}
	if want := "group " + dir; out != want {
		t.Errorf("the program saw %q; want %q (no descriptor but 15, its own group, the directory)", out, want)
	}
}

// In new namespaces with a user namespace — what Go's ForkExec would copy
// the address space for — the program is PID 1 of its PID namespace and
// has the ambient capabilities asked for, the rest of its capabilities
// dropped by its execve as an unmapped user.
func TestLaunchNamespaces(t *testing.T) {
	l := sh(t, `echo $$ >&3; grep -E '^Cap(Amb|Eff):' /proc/self/status >&3`)
	l.Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	l.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETUID}
	l.Pdeathsig = syscall.SIGTERM
	out, ws, err := launch(t, l, 3)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
		t.Skipf("no user namespaces here: %v", err)
	}
	if err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("launch: %v, %v", err, ws)
	}
	const want = 1<<unix.CAP_SYS_ADMIN | 1<<unix.CAP_SETUID
	lines := strings.Fields(out)
	if len(lines) != 5 || lines[0] != "1" {
		t.Fatalf("the program said %q; want its pid 1 and its capabilities", out)
	}
	for _, f := range [][2]string{{lines[1], lines[2]}, {lines[3], lines[4]}} {
		var v uint64
		if _, err := fmt.Sscanf(f[1], "%x", &v); err != nil || v != want {
			t.Errorf("%s %s; want %#x", f[0], f[1], uint64(want))
		}
	}
}

// A program that cannot be started is reported as the step that failed,
// with its errno, and the child is reaped.
func TestLaunchFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		l    *Launch
		step string
		err  error
	}{
		"missing program": {&Launch{Path: "/nonexistent/x", Argv: []string{"x"}}, "exec", unix.ENOENT},
		"missing dir":     {&Launch{Path: "/bin/true", Argv: []string{"true"}, Dir: "/nonexistent"}, "chdir", unix.ENOENT},
		"bad descriptor":  {&Launch{Path: "/bin/true", Argv: []string{"true"}, Files: []int{1 << 20}}, "descriptors", unix.EBADF},
	} {
		_, _, err := launch(t, tc.l, 1)
		var se *Error
		if !errors.As(err, &se) || se.Step != tc.step || !errors.Is(err, tc.err) {
			t.Errorf("%s: %v; want step %q, %v", name, err, tc.step, tc.err)
		}
	}
	if _, err := NewLaunch(&Launch{Path: "/bin/true", Argv: []string{"true"}, Cloneflags: unix.CLONE_VM}); err == nil {
		t.Error("NewLaunch took a clone flag that is no namespace")
	}
}
