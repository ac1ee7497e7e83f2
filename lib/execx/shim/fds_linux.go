//go:build linux

package shim

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noCloseRange is set once close_range has failed: the kernel is older
// than 5.11 (ENOSYS, or EINVAL for the CLOEXEC flag on 5.9 and 5.10) or a
// seccomp filter refuses it (EPERM); none of these changes while the
// process runs.
var noCloseRange atomic.Bool

// MarkCloexecFrom marks every open descriptor >= lo close-on-exec: one
// close_range(2) call, else a walk of /proc/self/fd.
func MarkCloexecFrom(lo int) {
	if !noCloseRange.Load() {
		if unix.CloseRange(uint(lo), ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
			return
		}
		noCloseRange.Store(true)
	}
	MarkCloexecDir("/proc/self/fd", lo)
}
