//go:build linux

// Package compile builds the exec stage's seccomp programs with
// go-seccomp-bpf. Only the generator of package filters' tables, its tests
// and architectures without a table link it: the runner sends programs
// compiled ahead of time, so go-seccomp-bpf's syscall tables are not
// built at every start of every tool.
package compile

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
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

// policy is the go-seccomp-bpf policy: the syscalls denied outright.
// Rules on arguments live in the guard filter: go-seccomp-bpf v1.6.0
// reuses the accumulator after a failed argument check as if it still
// held the syscall number, so a later group would match (or miss) by an
// argument's value.
func policy() *seccomp.Policy {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	return &seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: deniedSyscalls, Action: eperm},
			// glibc falls back to clone when clone3 is missing; clone3's
			// flags live in memory no filter can read.
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
		},
	}
}

// Compile returns the profile's filters in the order they are installed:
// the guard (rules on arguments), then the go-seccomp-bpf policy (the
// kernel applies the strictest verdict of all filters). Both profiles
// share them; strict differs by denyUnix, decided by the caller. Each
// program is its sock_filter array, 8 bytes per instruction in the
// machine's byte order, as stage.Spec.Filters carries it.
func Compile(profile string, denyUnix bool) ([][]byte, error) {
	switch profile {
	case stage.SeccompLandlock, stage.SeccompStrict:
	default:
		return nil, fmt.Errorf("unknown seccomp profile %q", profile)
	}
	guard, err := guardProgram(denyUnix)
	if err != nil {
		return nil, err
	}
	pol, err := policy().Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp policy: %w", err)
	}
	raw, err := bpf.Assemble(pol)
	if err != nil {
		return nil, fmt.Errorf("seccomp policy: %w", err)
	}
	return [][]byte{guard, encode(raw)}, nil
}

// encode lays raw out as struct sock_filter: u16 code, u8 jt, u8 jf, u32 k.
func encode(raw []bpf.RawInstruction) []byte {
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out
}

// guardProgram is the rules on arguments, as a small filter of its own
// (go-seccomp-bpf cannot express them correctly, see policy). Arguments
// are compared on their low 32 bits, as the kernel reads them (int or
// unsigned int): a request of 0x1_00005412 is still TIOCSTI.
//   - A syscall made with another architecture's convention (int 0x80 on
//     x86-64) fails: the policy is compiled for one syscall table, and
//     go-seccomp-bpf lets a foreign one through to its default action.
//   - ioctl TIOCSTI and TIOCLINUX fail (typing into a terminal).
//   - clone with a namespace flag fails (a user namespace would hand the
//     task a fresh set of capabilities).
//   - socket: unix (unless denyUnix) and TCP over IPv4 and IPv6, which
//     Landlock or the network namespace then confines; every other family,
//     type and protocol — UDP, raw, packet, netlink, MPTCP, ... — fails.
//     socketpair is left alone: its two ends reach nothing but each other.
//   - Scheduling, I/O priority, CPU affinity, nice and resource limits
//     can be changed for the calling thread only: sched_setattr,
//     sched_setscheduler, sched_setparam and sched_setaffinity with pid 0,
//     setpriority(PRIO_PROCESS, 0), ioprio_set(IOPRIO_WHO_PROCESS, 0),
//     prlimit64 with pid 0 (or reading another's, new limit NULL). Any
//     other pid — even the caller's own, or a thread of its own process by
//     tid — fails, as do process groups and users: a task cannot slow,
//     starve or pin its supervisor, its runner or any other process.
//   - No set-user-ID or set-group-ID bit can be set: chmod, fchmod,
//     fchmodat, fchmodat2, mknod and mknodat with S_ISUID or S_ISGID in
//     the mode fail, and so do creat, open and openat creating a file
//     (O_CREAT, O_TMPFILE) with one. openat2, whose mode lives in memory
//     no filter can read, fails with ENOSYS (callers fall back to openat).
func guardProgram(denyUnix bool) ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	if !littleEndian() {
		return nil, fmt.Errorf("guard filter assumes a little-endian architecture, not %s", info.Name)
	}
	const (
		allow    = uint32(seccomp.ActionAllow)
		eperm    = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
		enosys   = uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
		offNR    = 0
		offArch  = 4
		offArg0L = 16 // args[i]'s low half on a little-endian machine: 16+8i
		offArg1L = 24
		offArg2L = 32
		offArg2H = 36
		offArg3L = 40
		// ioprio_set's "which" for one process (linux/ioprio.h).
		ioprioWhoProcess = 1
		setID            = unix.S_ISUID | unix.S_ISGID
		// O_CREAT, and O_TMPFILE's own bit (O_TMPFILE includes O_DIRECTORY).
		creates = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
	)
	unixVerdict := allow
	if denyUnix {
		unixVerdict = eperm
	}
	a := asm{jumps: map[int][2]string{}, labels: map[string]int{}}
	a.ld(offArch)
	a.jeq(uint32(info.ID), "", "foreign")
	a.ld(offNR)
	a.jeq(uint32(unix.SYS_IOCTL), "ioctl", "")
	a.jeq(uint32(unix.SYS_SOCKET), "socket", "")
	a.jeq(uint32(unix.SYS_CLONE), "clone", "")
	for _, nr := range []uintptr{unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETAFFINITY} {
		a.jeq(uint32(nr), "self-arg0", "")
	}
	a.jeq(uint32(unix.SYS_SETPRIORITY), "setpriority", "")
	a.jeq(uint32(unix.SYS_IOPRIO_SET), "ioprio_set", "")
	a.jeq(uint32(unix.SYS_PRLIMIT64), "prlimit64", "")
	for _, nr := range append(modeArg1Calls, unix.SYS_FCHMOD) {
		a.jeq(uint32(nr), "mode-arg1", "")
	}
	for _, nr := range []uintptr{unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_MKNODAT} {
		a.jeq(uint32(nr), "mode-arg2", "")
	}
	if openCall != 0 {
		a.jeq(uint32(openCall), "open", "")
	}
	a.jeq(uint32(unix.SYS_OPENAT), "openat", "")
	a.jeq(uint32(unix.SYS_OPENAT2), "foreign", "")
	a.ret(allow)
	a.label("foreign")
	a.ret(enosys)
	a.label("ioctl")
	a.ld(offArg1L)
	a.jeq(unix.TIOCSTI, "deny", "")
	a.jeq(unix.TIOCLINUX, "deny", "")
	a.ret(allow)
	a.label("clone")
	a.ld(offArg0L)
	a.jset(nsFlags, "deny", "")
	a.ret(allow)
	a.label("socket")
	a.ld(offArg0L)
	a.jeq(unix.AF_UNIX, "unix", "")
	a.jeq(unix.AF_INET, "inet", "")
	a.jeq(unix.AF_INET6, "inet", "deny")
	a.label("unix")
	a.ret(unixVerdict)
	a.label("inet")
	a.ld(offArg1L)
	a.and(^uint32(unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK))
	a.jeq(unix.SOCK_STREAM, "", "deny")
	a.ld(offArg2L)
	a.jeq(0, "ok", "")
	a.jeq(unix.IPPROTO_TCP, "ok", "deny")
	a.label("self-arg0") // pid 0: the calling thread
	a.ld(offArg0L)
	a.jeq(0, "ok", "deny")
	a.label("setpriority") // which PRIO_PROCESS (0), who 0
	a.ld(offArg0L)
	a.jeq(unix.PRIO_PROCESS, "", "deny")
	a.ld(offArg1L)
	a.jeq(0, "ok", "deny")
	a.label("ioprio_set") // which IOPRIO_WHO_PROCESS, who 0
	a.ld(offArg0L)
	a.jeq(ioprioWhoProcess, "", "deny")
	a.ld(offArg1L)
	a.jeq(0, "ok", "deny")
	a.label("prlimit64") // pid 0, or new_limit NULL (a read)
	a.ld(offArg0L)
	a.jeq(0, "ok", "")
	a.ld(offArg2L)
	a.jeq(0, "", "deny")
	a.ld(offArg2H)
	a.jeq(0, "ok", "deny")
	a.label("open") // open(path, flags, mode)
	a.ld(offArg1L)
	a.jset(creates, "mode-arg2", "ok")
	a.label("openat") // openat(dirfd, path, flags, mode)
	a.ld(offArg2L)
	a.jset(creates, "mode-arg3", "ok")
	a.label("mode-arg1")
	a.ld(offArg1L)
	a.jset(setID, "deny", "ok")
	a.label("mode-arg2")
	a.ld(offArg2L)
	a.jset(setID, "deny", "ok")
	a.label("mode-arg3")
	a.ld(offArg3L)
	a.jset(setID, "deny", "ok")
	a.label("ok")
	a.ret(allow)
	a.label("deny")
	a.ret(eperm)
	prog, err := a.assemble()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	return encode(raw), nil
}

// asm is a classic-BPF assembler with labels: a conditional jump names
// where it goes when true and when false ("" is the next instruction).
type asm struct {
	ins    []bpf.Instruction
	jumps  map[int][2]string
	labels map[string]int
}

func (a *asm) ld(off uint32)  { a.ins = append(a.ins, bpf.LoadAbsolute{Off: off, Size: 4}) }
func (a *asm) ret(v uint32)   { a.ins = append(a.ins, bpf.RetConstant{Val: v}) }
func (a *asm) and(v uint32)   { a.ins = append(a.ins, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: v}) }
func (a *asm) label(l string) { a.labels[l] = len(a.ins) }

func (a *asm) jeq(v uint32, t, f string)  { a.jump(bpf.JumpEqual, v, t, f) }
func (a *asm) jset(v uint32, t, f string) { a.jump(bpf.JumpBitsSet, v, t, f) }

func (a *asm) jump(c bpf.JumpTest, v uint32, t, f string) {
	a.jumps[len(a.ins)] = [2]string{t, f}
	a.ins = append(a.ins, bpf.JumpIf{Cond: c, Val: v})
}

func (a *asm) assemble() ([]bpf.Instruction, error) {
	for at, to := range a.jumps {
		j := a.ins[at].(bpf.JumpIf)
		for k, l := range to {
			if l == "" {
				continue
			}
			dest, ok := a.labels[l]
			if !ok || dest <= at || dest-at-1 > 255 {
				return nil, fmt.Errorf("guard filter: bad jump to %q", l)
			}
			if k == 0 {
				j.SkipTrue = uint8(dest - at - 1)
			} else {
				j.SkipFalse = uint8(dest - at - 1)
			}
		}
		a.ins[at] = j
	}
	return a.ins, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
