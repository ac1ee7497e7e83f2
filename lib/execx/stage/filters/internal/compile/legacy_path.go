//go:build linux && !(arm64 || riscv64 || loong64)

package compile

import "golang.org/x/sys/unix"

// The calls of the older path-based table this architecture still has:
// each takes a mode as its second argument (open is checked apart, its
// mode being the third).
var (
	modeArg1Calls = []uintptr{unix.SYS_CHMOD, unix.SYS_CREAT, unix.SYS_MKNOD}
	openCall      = uintptr(unix.SYS_OPEN)
)
