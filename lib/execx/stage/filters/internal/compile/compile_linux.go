//go:build linux

// Package compile builds the exec stage's seccomp programs with
// go-seccomp-bpf. Only the generator of package filters' tables, its tests
// and architectures without a table link it: the runner sends programs
// compiled ahead of time, so go-seccomp-bpf's syscall tables are not
// built at every start of every tool.
package compile

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
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

// Compile returns the profile's filter, one program (the filters and
// tables of package filters keep a list: what the stage installs in
// order). Both profiles share it; strict differs by denyUnix, decided by
// the caller. The program is its sock_filter array, 8 bytes per
// instruction in the machine's byte order, as stage.Spec.Filters carries
// it.
//
// It is one program, not a guard of our own followed by a go-seccomp-bpf
// policy as before, and its syscall numbers are looked up in a binary
// tree, not a chain: what a task pays for its filter is mostly the
// kernel's preparation of it at every task start — seccomp's action cache
// runs the program for every syscall number of the architecture, through
// the whole chain for each number the chain does not name — and each
// program's allocation and JIT compilation (docs/performance.md, "Round
// 3"). The verdicts are those of the two programs before, for every
// architecture, number and argument (a test compares them).
func Compile(profile string, denyUnix bool) ([][]byte, error) {
	switch profile {
	case stage.SeccompLandlock, stage.SeccompStrict:
	default:
		return nil, fmt.Errorf("unknown seccomp profile %q", profile)
	}
	prog, err := program(denyUnix)
	if err != nil {
		return nil, err
	}
	return [][]byte{prog}, nil
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

// program is the filter:
//   - A syscall made with another architecture's convention (int 0x80 on
//     x86-64), or with x86-64's x32 numbers, fails with ENOSYS: the
//     numbers below are one syscall table's.
//   - deniedSyscalls fail with EPERM; clone3 (glibc falls back to clone
//     when it is missing; clone3's flags live in memory no filter can
//     read) and openat2 (its mode too) with ENOSYS.
//   - Rules on arguments, compared on their low 32 bits, as the kernel
//     reads them (int or unsigned int): a request of 0x1_00005412 is
//     still TIOCSTI.
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
//     (O_CREAT, O_TMPFILE) with one.
//   - Everything else is allowed (Landlock, the mount view and the
//     capability drop confine it).
func program(denyUnix bool) ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	if !littleEndian() {
		return nil, fmt.Errorf("seccomp filter assumes a little-endian architecture, not %s", info.Name)
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
		// x86-64's x32 syscalls are numbered from here (__X32_SYSCALL_BIT).
		x32Bit = 0x40000000
	)
	// Where each syscall number goes.
	var calls []call
	add := func(nr uintptr, to string) { calls = append(calls, call{uint32(nr), to}) }
	add(unix.SYS_IOCTL, "ioctl")
	add(unix.SYS_SOCKET, "socket")
	add(unix.SYS_CLONE, "clone")
	for _, nr := range []uintptr{unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETAFFINITY} {
		add(nr, "self-arg0")
	}
	add(unix.SYS_SETPRIORITY, "setpriority")
	add(unix.SYS_IOPRIO_SET, "ioprio_set")
	add(unix.SYS_PRLIMIT64, "prlimit64")
	for _, nr := range append(modeArg1Calls, unix.SYS_FCHMOD) {
		add(nr, "mode-arg1")
	}
	for _, nr := range []uintptr{unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_MKNODAT} {
		add(nr, "mode-arg2")
	}
	if openCall != 0 {
		add(openCall, "open")
	}
	add(unix.SYS_OPENAT, "openat")
	add(unix.SYS_OPENAT2, "foreign")
	add(unix.SYS_CLONE3, "foreign")
	for _, name := range deniedSyscalls {
		nr, ok := info.SyscallNames[name]
		if !ok {
			return nil, fmt.Errorf("seccomp filter: no syscall %s on %s", name, info.Name)
		}
		add(uintptr(nr), "deny")
	}
	slices.SortFunc(calls, func(a, b call) int { return cmp.Compare(a.nr, b.nr) })
	for i := 1; i < len(calls); i++ {
		if calls[i].nr == calls[i-1].nr {
			return nil, fmt.Errorf("seccomp filter: syscall %d named twice", calls[i].nr)
		}
	}
	unixVerdict := allow
	if denyUnix {
		unixVerdict = eperm
	}
	a := asm{jumps: map[int][2]string{}, labels: map[string]int{}}
	a.ld(offArch)
	a.jeq(uint32(info.ID), "", "foreign")
	a.ld(offNR)
	if info.ID == arch.X86_64.ID {
		a.jge(x32Bit, "foreign", "")
	}
	a.tree(calls, "ok")
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

// call is a syscall number and the label of its rule.
type call struct {
	nr uint32
	to string
}

// tree looks the syscall number (in the accumulator) up among calls,
// sorted by number, in a binary tree of JGE splits down to runs of at
// most four JEQs, and jumps to the label of the one it is; any other
// number goes to label otherwise. Every instruction counts: the kernel
// JIT-compiles the program at every task start.
func (a *asm) tree(calls []call, otherwise string) {
	if len(calls) <= 4 {
		for i, c := range calls {
			if i == len(calls)-1 {
				a.jeq(c.nr, c.to, otherwise)
			} else {
				a.jeq(c.nr, c.to, "")
			}
		}
		return
	}
	mid := len(calls) / 2
	right := fmt.Sprintf("tree-%d", calls[mid].nr)
	a.jge(calls[mid].nr, right, "")
	a.tree(calls[:mid], otherwise)
	a.label(right)
	a.tree(calls[mid:], otherwise)
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
func (a *asm) jge(v uint32, t, f string)  { a.jump(bpf.JumpGreaterOrEqual, v, t, f) }

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
				return nil, fmt.Errorf("seccomp filter: bad jump to %q", l)
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
