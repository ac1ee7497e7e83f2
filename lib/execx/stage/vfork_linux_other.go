//go:build linux && !amd64

package stage

import "syscall"

// vforkFlags: without rawVfork's assembly for this architecture the
// child is a copy of the parent (page tables copied, pages copy-on-write):
// slower, and as safe.
const vforkFlags = 0

// rawVfork is a plain raw system call here (see vforkFlags).
//
//go:nosplit
//go:norace
func rawVfork(trap, a1, a2, a3 uintptr) (r1 uintptr, err syscall.Errno) {
	r1, _, err = syscall.RawSyscall(trap, a1, a2, a3)
	return r1, err
}
