//go:build linux && amd64

package filters

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// legacySetIDCalls are the path system calls amd64 keeps beside the *at
// forms (chmod, creat), with set-ID modes: the filter refuses them there
// too, including a mode whose set-ID bit sits under higher garbage bits.
// arm64 has only the *at forms, which the common table covers.
func legacySetIDCalls(file, creatPath string) []callCase {
	return []callCase{
		{"chmod setuid high bits", func() error {
			_, _, e := unix.RawSyscall(unix.SYS_CHMOD, uintptr(unsafe.Pointer(must(unix.BytePtrFromString(file)))), 1<<32|0o4755, 0)
			return errnoErr(e)
		}, unix.EPERM},
		{"creat setuid", func() error {
			_, _, e := unix.RawSyscall(unix.SYS_CREAT, uintptr(unsafe.Pointer(must(unix.BytePtrFromString(creatPath)))), 0o4755, 0)
			return errnoErr(e)
		}, unix.EPERM},
	}
}
