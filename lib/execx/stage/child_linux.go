//go:build linux

package stage

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Go runtime's fork hooks, as package syscall uses them around its own
// fork: BeforeFork blocks every signal on the calling thread, keeps the
// goroutine from being preempted and poisons its stack guard (so code
// after the fork cannot grow the stack unnoticed); AfterFork undoes that
// in the parent; AfterForkInChild resets the handlers the runtime caught
// to SIG_DFL (ignored signals stay ignored) and restores the signal mask.
// They are the runtime's documented linkname entry points for this use.
//
//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

// Steps of the child, as it reports a failure (stepName names them).
const (
	stepSetsid    = 1
	stepPdeathsig = 2
	stepFDs       = 3
	stepNNP       = 4
	stepLandlock  = 5
	stepCaps      = 6
	stepSeccomp   = 7
	stepExec      = 8
	stepSetpgid   = 24 // a Launch's steps from here
	stepChdir     = 25
	stepAmbient   = 26
	stepTmpRule   = 30 // Spec.PrivateTmp's Landlock rule
	stepRlimit    = 64 // + index into Child.rlimits
	maxRlimits    = 64
)

// Child is a task's process as its parent prepared it: everything the
// child applies between fork and execve, computed and allocated by the
// parent, so that the child itself only makes system calls on memory
// that already exists. The order of its steps is the guarantee: a new
// session and the parent-death signal first; the mount view, if the
// parent asked for one (InView: a mount namespace of the child's own,
// built before anything restricts it); descriptors 0-2 (nothing
// else survives execve: every other descriptor of the parent is
// close-on-exec); the resource limits but the address space; no_new_privs;
// Landlock; the capability drop; the seccomp filters (last of the
// restrictions, so none of the calls before is filtered); the address
// space limit (after the filters, as it always was); execve. A failed
// step reaches the parent as {step, errno} on a close-on-exec pipe, and
// the child exits: nothing of the program ran.
type Child struct {
	path       *byte
	argv, envp []*byte
	ppid       uintptr
	setsid     bool // a new session (a task's); else a process group of its own
	pdeathsig  uintptr
	fds        []int // descriptors that become 0, 1, ... (-1: closed)
	// work is the child's copy of fds as it moves them: allocated here,
	// since the child allocates nothing, and read by nobody else.
	work       []int
	nextfd     int     // above every descriptor the child uses
	cloneFlags uintptr // namespaces (a Launch's)
	dir        *byte   // the working directory (a Launch's), nil: as is
	ambient    []uintptr
	// rlimits in the order they are set; the address space limit, if
	// any, is the last one and set after the seccomp filters (early: the
	// count before it).
	rlimits   []childRlimit
	early     int
	nnp       bool
	ruleset   int // Landlock ruleset (close-on-exec), -1: none
	caps      *capDrop
	filters   []unix.SockFprog
	useClone3 bool
	clone3    cloneArgs
	names     []string // the rlimits' names, for errors
	// view, if not nil, is the mount view the child builds first (InView);
	// viewDirs and viewCwd name its trees and directory in errors.
	view     *childView
	viewDirs []string
	viewCwd  string
	// privateTmp (Spec.PrivateTmp), opened with tmpHow in the child once
	// the view is built, gets a rule of tmpRights in the ruleset.
	privateTmp *byte
	tmpHow     unix.OpenHow
	tmpRights  uint64
}

type childRlimit struct {
	resource uintptr
	lim      syscall.Rlimit
}

// cloneArgs is struct clone_args (clone3(2)) up to cgroup.
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
}

// NewChild prepares s for a child of the calling thread with std (the
// parent's descriptors) as its 0-2, started in the cgroup v2 directory
// cgroupFD unless it is -1. s.RWFDs hold the writable trees the Landlock
// rules are made from. The error is an *Error naming the step whose
// preparation failed. Close releases what it holds.
func NewChild(s *Spec, std [3]int, cgroupFD int) (_ *Child, err error) {
	c := &Child{fds: std[:], work: make([]int, len(std)), nnp: s.NNP, ruleset: -1,
		ppid: uintptr(os.Getpid()), setsid: true, pdeathsig: uintptr(unix.SIGKILL)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.setExec(s.Path, s.Argv, s.Env); err != nil {
		return nil, err
	}
	var as []Rlimit
	if err := c.nofileSoft(s); err != nil {
		return nil, err
	}
	for _, r := range s.Rlimits {
		if r.Resource == unix.RLIMIT_AS {
			as = append(as, r)
			continue
		}
		if err := c.addRlimit(r); err != nil {
			return nil, err
		}
	}
	c.early = len(c.rlimits)
	for _, r := range as {
		if err := c.addRlimit(r); err != nil {
			return nil, err
		}
	}
	if s.Landlock > 0 {
		if c.ruleset, err = landlockRuleset(s.Landlock, s.RW, s.RWFDs, s.Nodes, s.NetOpen); err != nil {
			return nil, &Error{"landlock", err}
		}
		if c.ruleset, err = above2(c.ruleset); err != nil {
			return nil, &Error{"landlock", err}
		}
		if s.PrivateTmp != "" {
			if c.privateTmp, err = syscall.BytePtrFromString(s.PrivateTmp); err != nil {
				return nil, &Error{"landlock", err}
			}
			fs, _, _ := landlockHandled(s.Landlock)
			c.tmpRights = writeRights(fs, s.Nodes)
			c.tmpHow = unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		}
	}
	if s.DropCaps {
		if c.caps, err = newCapDrop(s.KeepCaps); err != nil {
			return nil, &Error{"capabilities", err}
		}
	}
	if c.filters, err = sockProgs(s.Filters); err != nil {
		return nil, &Error{"seccomp", err}
	}
	if cgroupFD >= 0 {
		c.useClone3 = true
		c.clone3 = cloneArgs{flags: unix.CLONE_INTO_CGROUP | vforkFlags, exitSignal: uint64(unix.SIGCHLD), cgroup: uint64(cgroupFD)}
	}
	return c, nil
}

// setExec is what the child's execve gets, as the C strings it takes.
func (c *Child) setExec(path string, argv, env []string) (err error) {
	if c.path, err = syscall.BytePtrFromString(path); err != nil {
		return &Error{"exec", err}
	}
	if c.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return &Error{"exec", err}
	}
	if c.envp, err = syscall.SlicePtrFromStrings(env); err != nil {
		return &Error{"exec", err}
	}
	return nil
}

func (c *Child) addRlimit(r Rlimit) error {
	if len(c.rlimits) == maxRlimits {
		return &Error{"rlimit " + r.Name, errors.New("too many limits")}
	}
	lim, err := limitOf(r)
	if err != nil {
		return err
	}
	c.rlimits = append(c.rlimits, childRlimit{uintptr(r.Resource), lim})
	c.names = append(c.names, r.Name)
	return nil
}

// nofileSoft adds s.NofileSoft as the soft open-files limit, the hard one
// as it is, unless s sets the limit itself or it is already so.
func (c *Child) nofileSoft(s *Spec) error {
	if s.NofileSoft == 0 || slices.ContainsFunc(s.Rlimits, func(r Rlimit) bool { return r.Resource == unix.RLIMIT_NOFILE }) {
		return nil
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		return &Error{"rlimit nofile", err}
	}
	if cur.Cur == s.NofileSoft {
		return nil
	}
	c.rlimits = append(c.rlimits, childRlimit{unix.RLIMIT_NOFILE, syscall.Rlimit{Cur: min(s.NofileSoft, cur.Max), Max: cur.Max}})
	c.names = append(c.names, "nofile")
	return nil
}

// Close releases the Landlock ruleset; the Child cannot start after it.
func (c *Child) Close() {
	if c.ruleset >= 0 {
		unix.Close(c.ruleset)
		c.ruleset = -1
	}
}

// above2 moves fd above the standard descriptors the child fills.
func above2(fd int) (int, error) {
	if fd > 2 {
		return fd, nil
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	unix.Close(fd)
	return nfd, err
}

// Start forks the child from the calling thread, which must outlive the
// child's program: the parent-death signal is tied to it. The Go runtime
// ends a thread only when a goroutine locked to it (runtime.LockOSThread)
// returns, so the caller either is locked and never returns while the
// program runs, or runs in a process where no goroutine ends locked. It returns once the
// program runs (the child's execve closed the report pipe) or, with an
// *Error, once the child failed and was reaped: then nothing of the
// program ran. Step "exec" is execve's own failure.
func (c *Child) Start() (int, error) {
	var p [2]int
	syscall.ForkLock.Lock()
	err := unix.Pipe2(p[:], unix.O_CLOEXEC)
	if err == nil {
		if p[1], err = above2(p[1]); err != nil {
			unix.Close(p[0])
		}
	}
	if err != nil {
		syscall.ForkLock.Unlock()
		return 0, &Error{"fork", err}
	}
	// Above every source and every target: a source moved out of the
	// way must not land on a target still to be filled or closed.
	c.nextfd = max(p[1], c.ruleset, len(c.fds)-1) + 1
	for _, fd := range c.fds {
		c.nextfd = max(c.nextfd, fd+1)
	}
	pid, errno := c.fork(p[1])
	runtimeAfterFork()
	syscall.ForkLock.Unlock()
	unix.Close(p[1])
	defer unix.Close(p[0])
	if errno != 0 {
		return 0, &Error{"fork", errno}
	}
	// The child has exec'd or exited by now where it shares our memory
	// (vforkFlags); else it runs on its own and we wait for its report.
	var rep [8]byte
	n, err := readFull(p[0], rep[:])
	if n == 0 && err == nil {
		return pid, nil // EOF: execve closed the pipe
	}
	// The child failed (or we cannot tell): it exits on its own; reap it,
	// and kill it first in case the report was cut short.
	if n != len(rep) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	var ws unix.WaitStatus
	for {
		if _, werr := unix.Wait4(pid, &ws, 0, nil); !errors.Is(werr, unix.EINTR) {
			break
		}
	}
	if n != len(rep) {
		return 0, &Error{"report", errors.Join(errors.New("short report from the child"), err)}
	}
	step := binary.NativeEndian.Uint32(rep[:4])
	errno = syscall.Errno(binary.NativeEndian.Uint32(rep[4:]))
	if e := c.viewError(step, errno); e != nil {
		return 0, e
	}
	return 0, &Error{c.stepName(step), errno}
}

func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// stepName names a reported step as the steps of the stage always were.
func (c *Child) stepName(step uint32) string {
	switch {
	case step == stepSetsid:
		return "setsid"
	case step == stepPdeathsig:
		return "parent-death signal"
	case step == stepFDs:
		return "descriptors"
	case step >= stepRlimit && int(step-stepRlimit) < len(c.names):
		return "rlimit " + c.names[step-stepRlimit]
	case step == stepNNP:
		return "no_new_privs"
	case step == stepLandlock:
		return "landlock"
	case step == stepCaps:
		return "capabilities"
	case step == stepSeccomp:
		return "seccomp"
	case step == stepExec:
		return "exec"
	case step == stepSetpgid:
		return "setpgid"
	case step == stepChdir:
		return "chdir"
	case step == stepAmbient:
		return "ambient capabilities"
	case step == stepTmpRule:
		return "landlock: rule " + c.tmpName()
	}
	return "unknown step"
}

// fork clones the child: it shares this process's memory until its
// execve where the architecture has rawVfork's assembly (vforkFlags),
// else it is a copy. The caller calls runtimeAfterFork at once. Between
// runtimeBeforeFork and the clone nothing may grow the stack or be
// preempted; in the child everything down to execve is nosplit code that
// makes raw system calls on memory the parent prepared (no allocation, no
// runtime call, no write barrier, and no write to anything of the
// parent's but the child's own stack frames and Child.work, which the
// parent allocated for it and does not read).
//
//go:nosplit
//go:norace
func (c *Child) fork(pipe int) (pid int, errno syscall.Errno) {
	var r1 uintptr
	runtimeBeforeFork()
	if c.useClone3 {
		r1, errno = rawVfork(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&c.clone3)), unsafe.Sizeof(c.clone3), 0)
	} else {
		r1, errno = rawVfork(unix.SYS_CLONE, vforkFlags|c.cloneFlags|uintptr(unix.SIGCHLD), 0, 0)
	}
	if errno != 0 || r1 != 0 {
		// The parent: return at once. The child may have used this
		// frame; r1 and errno were written after it was gone.
		return int(r1), errno
	}
	c.child(uintptr(pipe)) // does not return
	return 0, 0
}

// child runs in the new process: it applies the steps (see Child) and
// execs the program, or reports the failed step on pipe and exits.
//
//go:nosplit
//go:norace
func (c *Child) child(pipe uintptr) {
	var (
		err1   syscall.Errno
		r1     uintptr
		step   uintptr
		fd     []int
		nextfd int
		i      int
		rep    [2]uint32
	)
	runtimeAfterForkInChild()
	if c.setsid {
		if _, _, err1 = syscall.RawSyscall(unix.SYS_SETSID, 0, 0, 0); err1 != 0 {
			step = stepSetsid
			goto fail
		}
	} else if _, _, err1 = syscall.RawSyscall(unix.SYS_SETPGID, 0, 0, 0); err1 != 0 {
		step = stepSetpgid
		goto fail
	}
	if _, _, err1 = syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, c.pdeathsig, 0); err1 != 0 {
		step = stepPdeathsig
		goto fail
	}
	// The parent may have died before the signal was armed. (Across a
	// new PID namespace getppid says 0: a Launch's program learns of its
	// parent's death otherwise, see Launch.)
	if r1, _, _ = syscall.RawSyscall(unix.SYS_GETPPID, 0, 0, 0); c.cloneFlags&unix.CLONE_NEWPID == 0 && r1 != c.ppid {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 253, 0, 0)
	}
	if c.dir != nil {
		if _, _, err1 = syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(c.dir)), 0, 0); err1 != 0 {
			step = stepChdir
			goto fail
		}
	}
	// The mount view, before any restriction (nothing is restricted yet
	// that it needs).
	if c.view != nil {
		if step, err1 = c.view.setup(); step != 0 {
			goto fail
		}
	}
	if c.privateTmp != nil {
		if err1 = c.tmpRule(); err1 != 0 {
			step = stepTmpRule
			goto fail
		}
	}
	// Descriptors: first move any source below its target out of the
	// way (above everything in use), then put each in place; dup3 makes
	// the copy without close-on-exec, a descriptor already in place has
	// the flag cleared, and a target without a source (-1) is closed.
	fd, nextfd = c.work, c.nextfd
	for i = 0; i < len(fd); i++ {
		fd[i] = c.fds[i]
	}
	for i = 0; i < len(fd); i++ {
		if fd[i] >= 0 && fd[i] < i {
			if r1, _, err1 = syscall.RawSyscall(unix.SYS_DUP3, uintptr(fd[i]), uintptr(nextfd), unix.O_CLOEXEC); err1 != 0 {
				step = stepFDs
				goto fail
			}
			fd[i] = int(r1)
			nextfd++
		}
	}
	for i = 0; i < len(fd); i++ {
		if fd[i] == -1 {
			syscall.RawSyscall(unix.SYS_CLOSE, uintptr(i), 0, 0)
			continue
		}
		if fd[i] == i {
			_, _, err1 = syscall.RawSyscall(unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0)
		} else {
			_, _, err1 = syscall.RawSyscall(unix.SYS_DUP3, uintptr(fd[i]), uintptr(i), 0)
		}
		if err1 != 0 {
			step = stepFDs
			goto fail
		}
	}
	// Only the descriptors put in place (a task's 0-2) may survive
	// execve. The supervisor marked everything else close-on-exec already
	// (by a walk of its descriptors where the kernel has no close_range,
	// and then this call fails harmlessly); the runner's descriptors are
	// all close-on-exec (Go opens every one so).
	syscall.RawSyscall(unix.SYS_CLOSE_RANGE, uintptr(len(fd)), ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC)
	if len(c.ambient) > 0 {
		if err1 = c.raiseAmbient(); err1 != 0 {
			step = stepAmbient
			goto fail
		}
	}
	for i = 0; i < c.early; i++ {
		if _, _, err1 = syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, c.rlimits[i].resource, uintptr(unsafe.Pointer(&c.rlimits[i].lim)), 0, 0, 0); err1 != 0 {
			step = stepRlimit + uintptr(i)
			goto fail
		}
	}
	if c.nnp {
		if _, _, err1 = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); err1 != 0 {
			step = stepNNP
			goto fail
		}
	}
	if c.ruleset >= 0 {
		if _, _, err1 = syscall.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(c.ruleset), 0, 0); err1 != 0 {
			step = stepLandlock
			goto fail
		}
	}
	if c.caps != nil {
		if err1 = c.caps.apply(); err1 != 0 {
			step = stepCaps
			goto fail
		}
	}
	for i = 0; i < len(c.filters); i++ {
		if _, _, err1 = syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&c.filters[i]))); err1 != 0 {
			step = stepSeccomp
			goto fail
		}
	}
	for i = c.early; i < len(c.rlimits); i++ {
		if _, _, err1 = syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, c.rlimits[i].resource, uintptr(unsafe.Pointer(&c.rlimits[i].lim)), 0, 0, 0); err1 != 0 {
			step = stepRlimit + uintptr(i)
			goto fail
		}
	}
	_, _, err1 = syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(c.path)),
		uintptr(unsafe.Pointer(&c.argv[0])), uintptr(unsafe.Pointer(&c.envp[0])))
	step = stepExec

fail:
	rep[0], rep[1] = uint32(step), uint32(err1)
	syscall.RawSyscall(unix.SYS_WRITE, pipe, uintptr(unsafe.Pointer(&rep[0])), unsafe.Sizeof(rep))
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 253, 0, 0)
	}
}

// raiseAmbient makes each of c.ambient inheritable and then ambient, so
// that the program keeps it across execve (a Launch's: see
// Launch.AmbientCaps).
//
//go:nosplit
//go:norace
func (c *Child) raiseAmbient() syscall.Errno {
	var (
		hdr  = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		data [2]unix.CapUserData
		i    int
	)
	if _, _, err1 := syscall.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err1 != 0 {
		return err1
	}
	for i = 0; i < len(c.ambient); i++ {
		data[c.ambient[i]>>5].Inheritable |= 1 << (c.ambient[i] & 31)
	}
	if _, _, err1 := syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err1 != 0 {
		return err1
	}
	for i = 0; i < len(c.ambient); i++ {
		if _, _, err1 := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c.ambient[i], 0, 0, 0); err1 != 0 {
			return err1
		}
	}
	return 0
}

// tmpRule adds the private temp dir's write rule to the ruleset, from a
// descriptor on the tmpfs the view mounted there (Spec.PrivateTmp).
//
//go:nosplit
//go:norace
func (c *Child) tmpRule() syscall.Errno {
	r1, _, err1 := syscall.RawSyscall6(unix.SYS_OPENAT2, uintptr(atFDCWD), uintptr(unsafe.Pointer(c.privateTmp)),
		uintptr(unsafe.Pointer(&c.tmpHow)), unsafe.Sizeof(c.tmpHow), 0, 0)
	if err1 != 0 {
		return err1
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: c.tmpRights, Parent_fd: int32(r1)}
	_, _, err1 = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(c.ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	syscall.RawSyscall(unix.SYS_CLOSE, r1, 0, 0)
	return err1
}

// tmpName is Spec.PrivateTmp as given.
func (c *Child) tmpName() string {
	if c.privateTmp == nil {
		return ""
	}
	return unix.BytePtrToString(c.privateTmp)
}

// apply drops the capabilities in the child (see capDrop). Where the
// parent's bounding set was emptied before (check: a pooled supervisor's,
// DropBoundingSet), a capability already out of it is not dropped again:
// each drop makes a new set of credentials (about a microsecond), a read
// does not.
//
//go:nosplit
//go:norace
func (d *capDrop) apply() syscall.Errno {
	var c, in uintptr
	var err1 syscall.Errno
	for c = 0; c <= 63; c++ {
		if d.keep>>c&1 != 0 {
			continue
		}
		if d.check {
			in, _, err1 = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, c, 0, 0, 0, 0)
			if err1 == unix.EINVAL {
				break // past the kernel's last capability
			}
			if err1 == 0 && in == 0 {
				continue
			}
		}
		_, _, err1 = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0)
		if err1 == unix.EINVAL {
			break // past the kernel's last capability
		}
		if err1 == unix.EPERM {
			if d.anyCap {
				return err1
			}
			break
		}
		if err1 != 0 {
			return err1
		}
	}
	_, _, err1 = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0)
	if err1 != 0 && err1 != unix.EINVAL {
		return err1
	}
	if _, _, err1 = syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&d.hdr)), uintptr(unsafe.Pointer(&d.data[0])), 0); err1 != 0 {
		return err1
	}
	for c = 0; c <= 63; c++ { // so a non-root program keeps them across execve
		if d.keep>>c&1 != 0 {
			syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c, 0, 0, 0)
		}
	}
	return 0
}
