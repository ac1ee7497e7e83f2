//go:build linux

package stage

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LoadSeccomp installs filters on the calling thread, in order (the
// kernel applies the strictest verdict of all). Each is a struct
// sock_filter array as package filters compiles it. no_new_privs (or
// CAP_SYS_ADMIN) must already be in effect. A task's filters are loaded
// by its child (see Child); this is for callers that filter a thread of
// their own.
func LoadSeccomp(filters [][]byte) error {
	progs, err := sockProgs(filters)
	if err != nil {
		return err
	}
	for i := range progs {
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&progs[i]))); errno != 0 {
			return fmt.Errorf("filter %d: %w", i, errno)
		}
	}
	return nil
}

// sockProgs decodes filters into the struct sock_fprog each is loaded
// with. The instructions they point to are Go memory the returned slice
// keeps alive.
func sockProgs(filters [][]byte) ([]unix.SockFprog, error) {
	progs := make([]unix.SockFprog, len(filters))
	for i, prog := range filters {
		if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 0xffff {
			return nil, fmt.Errorf("filter %d: %d bytes is no BPF program", i, len(prog))
		}
		ins := make([]unix.SockFilter, len(prog)/8)
		for k := range ins {
			b := prog[8*k:]
			ins[k] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
		}
		progs[i] = unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	}
	return progs, nil
}

// SeccompSupported reports whether this kernel accepts seccomp filters:
// strict mode with a flag set fails with EINVAL where seccomp(2) exists
// and is allowed.
func SeccompSupported() bool {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 1, 0)
	return errno == unix.EINVAL
}
