//go:build linux

package stage

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// vforkFlags share the parent's memory with the child until its execve
// (the parent thread waits meanwhile): no page table is copied, and no
// page of the parent's becomes copy-on-write, which a copying fork costs
// the parent in faults afterwards. It needs rawVfork's care for the
// shared stack, and a child that writes no memory the parent reads.
const vforkFlags = unix.CLONE_VM | unix.CLONE_VFORK

// rawVfork makes the clone system call trap (clone or clone3) with
// vforkFlags among its flags. In assembly.
//
//go:noescape
func rawVfork(trap, a1, a2, a3 uintptr) (r1 uintptr, err syscall.Errno)
