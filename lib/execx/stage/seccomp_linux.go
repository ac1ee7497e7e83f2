//go:build linux

package stage

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM under every seccomp profile: reaching
// into other processes (ptrace, their memory, their descriptors), kernel
// administration Landlock cannot reach (mounts, kexec, modules, swap,
// reboot, BPF, keyrings), new namespaces (a user namespace would hand the
// task a fresh set of capabilities) and io_uring, whose operations do not
// pass through this filter.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "swapon", "swapoff", "reboot",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"unshare", "setns", "acct", "quotactl", "syslog",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
}

// nsFlags are the clone flags that make a namespace.
const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// policy is the go-seccomp-bpf policy of a profile. Sockets: unix ones
// (unless denyUnix) and TCP over IPv4 and IPv6 (which Landlock or the
// network namespace then confines); every other family and type — UDP,
// raw, packet, netlink, ... — fails with EPERM. socketpair is always
// allowed: its two ends reach nothing but each other.
func policy(denyUnix bool) *seccomp.Policy {
	var inetStream []seccomp.NameWithConditions
	if !denyUnix {
		inetStream = append(inetStream, seccomp.NameWithConditions{Name: "socket",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}})
	}
	for _, family := range []uint64{unix.AF_INET, unix.AF_INET6} {
		for _, flags := range []uint64{0, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK} {
			for _, proto := range []uint64{0, unix.IPPROTO_TCP} {
				inetStream = append(inetStream, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.Equal, Value: family},
					{Argument: 1, Operation: seccomp.Equal, Value: unix.SOCK_STREAM | flags},
					{Argument: 2, Operation: seccomp.Equal, Value: proto},
				}})
			}
		}
	}
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	return &seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: deniedSyscalls, Action: eperm},
			// glibc falls back to clone when clone3 is missing; clone3's
			// flags live in memory the filter cannot read.
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.BitsSet, Value: nsFlags}}}}, Action: eperm},
			{NamesWithCondtions: inetStream, Action: seccomp.ActionAllow},
			{Names: []string{"socket"}, Action: eperm},
		},
	}
}

// loadSeccomp installs the profile's filters on the calling thread: the
// go-seccomp-bpf policy, then guard. Both profiles share one filter today;
// strict differs by denyUnix, decided by the caller.
func loadSeccomp(profile string, denyUnix bool) error {
	switch profile {
	case SeccompLandlock, SeccompStrict:
	default:
		return fmt.Errorf("unknown profile %q", profile)
	}
	if err := loadGuard(); err != nil {
		return err
	}
	return seccomp.LoadFilter(seccomp.Filter{Policy: *policy(denyUnix)})
}

// loadGuard installs the two rules go-seccomp-bpf cannot express, as a
// filter of its own (the kernel applies the strictest verdict of all
// filters):
//   - a syscall made with another architecture's convention (int 0x80 on
//     x86-64) fails: a policy is compiled for one syscall table, and
//     go-seccomp-bpf lets a foreign one through to its default action;
//   - ioctl TIOCSTI and TIOCLINUX fail, comparing only the low 32 bits of
//     the request, as the kernel does: go-seccomp-bpf compares all 64, so
//     0x1_00005412 would pass it and still be TIOCSTI.
func loadGuard() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	if !littleEndian() {
		return fmt.Errorf("guard filter assumes a little-endian architecture, not %s", info.Name)
	}
	const (
		ret      = uint32(seccomp.ActionAllow)
		eperm    = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
		enosys   = uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
		offNR    = 0
		offArch  = 4
		offArg1L = 16 + 8*1 // args[1], low half on a little-endian machine
	)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: enosys},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_IOCTL), SkipTrue: 1},
		bpf.RetConstant{Val: ret},
		bpf.LoadAbsolute{Off: offArg1L, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipTrue: 1},
		bpf.RetConstant{Val: ret},
		bpf.RetConstant{Val: eperm},
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("guard filter: %w", errno)
	}
	return nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// SeccompSupported reports whether this kernel accepts seccomp filters.
func SeccompSupported() bool { return seccomp.Supported() }
