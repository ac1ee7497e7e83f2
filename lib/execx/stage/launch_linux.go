//go:build linux

package stage

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Launch is a program started in new namespaces by a Child of its own:
// the runner's supervisor, started in its user namespace. Go's
// syscall.ForkExec copies the whole address space of the caller for a
// child that makes a user namespace (so that a parent could write the
// child's ID maps while it waits; the supervisor maps itself), which
// costs a Go runner its page tables' copy, copy-on-write faults after
// it and the copy's teardown at the execve — several hundred
// microseconds of a strict start (docs/performance.md, Round 9). A
// Child shares the caller's memory until the execve instead (vforkFlags).
//
// The program gets, in this order: a process group of its own, the
// parent-death signal, the working directory, Files as its descriptors
// 0, 1, ... (every other descriptor is close-on-exec), and AmbientCaps.
// Across a new PID namespace the child cannot
// check that its parent is still alive once the signal is armed
// (getppid says 0 there): the program must learn of its parent's death
// otherwise too (the supervisor: EOF on its control pipe).
type Launch struct {
	Path      string
	Argv, Env []string
	// Dir is the working directory; "" keeps the caller's.
	Dir string
	// Files become descriptors 0, 1, ...; -1 leaves that number closed.
	Files []int
	// Cloneflags are the namespaces (CLONE_NEW*) of the clone.
	Cloneflags uintptr
	// AmbientCaps are made inheritable and ambient, so that the program
	// keeps them across execve (in a new user namespace, whose IDs are not
	// mapped yet, the execve would drop every other capability).
	AmbientCaps []uintptr
	Pdeathsig   syscall.Signal
}

// NewLaunch prepares l for Start. The error is an *Error naming the part
// of l that cannot be prepared.
func NewLaunch(l *Launch) (_ *Child, err error) {
	c := &Child{fds: l.Files, work: make([]int, len(l.Files)), ruleset: -1, ppid: uintptr(os.Getpid()),
		pdeathsig:  uintptr(l.Pdeathsig),
		cloneFlags: l.Cloneflags}
	const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUTS | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP
	if l.Cloneflags&^nsFlags != 0 {
		return nil, &Error{"fork", fmt.Errorf("clone flags %#x: only namespaces", l.Cloneflags&^nsFlags)}
	}
	if len(l.Argv) == 0 {
		return nil, &Error{"exec", fmt.Errorf("no argv[0]")}
	}
	for _, fd := range l.Files {
		if fd < -1 {
			return nil, &Error{"descriptors", fmt.Errorf("descriptor %d", fd)}
		}
	}
	for _, cp := range l.AmbientCaps {
		if cp > 63 {
			return nil, &Error{"ambient capabilities", fmt.Errorf("capability %d out of range", cp)}
		}
	}
	c.ambient = l.AmbientCaps
	if err := c.setExec(l.Path, l.Argv, l.Env); err != nil {
		return nil, err
	}
	if l.Dir != "" {
		if c.dir, err = syscall.BytePtrFromString(l.Dir); err != nil {
			return nil, &Error{"chdir", err}
		}
	}
	return c, nil
}
