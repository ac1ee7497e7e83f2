//go:build linux

package execx

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

var (
	abiOnce sync.Once
	abiVal  int
)

// landlockABI is the kernel's Landlock ABI version (0: none). We ask the
// kernel ourselves rather than rely on a library's best effort, which
// silently enforces less on older kernels: the Result must say exactly
// what was enforced.
func landlockABI() int {
	abiOnce.Do(func() {
		v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		if errno == 0 && int(v) > 0 {
			abiVal = int(v)
		}
	})
	return abiVal
}

// Landlock access rights by the ABI that introduced them.
const (
	llFSv1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llFileRights are the rights that apply to a file (not a directory):
	// the kernel refuses a rule on a file that grants directory rights.
	llFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockHandled returns what ABI abi can restrict: filesystem rights,
// network rights, scopes. Everything it can restrict is restricted; the
// rules then grant back reads everywhere and writes beneath the workspace.
func landlockHandled(abi int) (fs, net, scoped uint64) {
	fs = llFSv1
	if abi >= 2 {
		fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 4 {
		net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 5 {
		fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	if abi >= 9 {
		fs |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if abi >= 10 {
		net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	}
	return fs, net, scoped
}

// landlockFeatures names what ABI v enforces, as listed in
// Result.isolation.enforced and by `artexec isolation`.
func landlockFeatures(v int) []string {
	var out []string
	if v >= 1 {
		out = append(out, "landlock.fs")
	}
	if v >= 4 {
		out = append(out, "landlock.net.tcp")
	}
	if v >= 6 {
		out = append(out, "landlock.scope.signal", "landlock.scope.abstract_unix_socket")
	}
	if v >= 10 {
		out = append(out, "landlock.net.udp")
	}
	return out
}

func planIsolation(p *Policy, l *Limits, opt *Options) (ip isoPlan, err error) {
	ip = isoPlan{backend: p.Isolation, bestEffort: p.IsolationBestEffort, supervise: opt.Supervised}
	var rlEnforced []string
	ip.rlimits, rlEnforced = rlimitsOf(l)
	switch p.Isolation {
	case IsolationNone:
	case IsolationSeatbelt:
		if !ip.bestEffort {
			return ip, unavailable("seatbelt", errors.New("sandbox-exec exists only on macOS"))
		}
	case IsolationLandlock, IsolationStrict:
		if abi := landlockABI(); abi > 0 {
			ip.landlock = abi
			ip.nnp = true
		} else if !ip.bestEffort {
			return ip, unavailable(string(p.Isolation), errors.New("the kernel has no Landlock"))
		}
		if p.Isolation == IsolationStrict {
			ip.namespaces = true
			ip.supervise = true // PID 1 of the new namespace is our shim
			ip.nnp = true
		}
		if ip.tmpdir, err = makeTmpdir(); err != nil {
			return ip, err
		}
	}
	ip.enforced = ip.enforcedList(rlEnforced)
	return ip, nil
}

// enforcedList is computed from the plan, so dropping a feature at start
// (best effort) and recomputing keeps the report exact.
func (ip *isoPlan) enforcedList(rl []string) []string {
	out := []string{}
	if ip.namespaces {
		out = append(out, "namespace.user", "namespace.pid", "namespace.net")
	}
	if ip.nnp {
		out = append(out, "no_new_privs")
	}
	out = append(out, landlockFeatures(ip.landlock)...)
	return append(out, rl...)
}

// applyLandlock restricts the calling OS thread — which must be locked and
// must be the one that then calls execve or forks the task — to: read and
// execute everywhere, write only beneath rw (plus /dev/null and friends),
// and the network and IPC scopes denied as far as ABI abi allows. It sets
// no_new_privs on the thread first, as Landlock requires. Only this
// thread is restricted: the task inherits its credentials, and nothing
// else in the process runs task code.
func applyLandlock(abi int, rw []string) error {
	if abi <= 0 {
		return errors.New("landlock: not available")
	}
	fs, net, scoped := landlockHandled(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fs, Handled_access_net: net, Scoped: scoped}
	size := unsafe.Sizeof(attr)
	if abi < 10 {
		size = unsafe.Offsetof(attr.Quiet_access_fs) // the struct grew with ABI 10
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(rfd)
	defer unix.Close(ruleset)

	rwRights := fs &^ (unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)
	if err := addPathRule(ruleset, "/", fs&llRead); err != nil {
		return err
	}
	for _, dir := range rw {
		if err := addPathRule(ruleset, dir, rwRights); err != nil {
			return err
		}
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		if err := addPathRule(ruleset, dev, fs&llFileRights); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

func addPathRule(ruleset int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule %s: %w", path, err)
	}
	defer unix.Close(fd)
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock rule %s: %w", path, errno)
	}
	return nil
}

// landlockRW is what a landlocked task may write: the workspace and its
// private temp dir. (A rule is made from a descriptor opened on the path,
// so symlinks in it are resolved by that open.)
func (pl *plan) landlockRW() []string {
	rw := []string{pl.workspace}
	if pl.iso.tmpdir != "" {
		rw = append(rw, pl.iso.tmpdir)
	}
	return rw
}

// threadRestrictions is what the runner applies to the thread that forks a
// task's direct child, when no shim does it (shim: the shim applies
// everything itself).
func threadRestrictions(pl *plan, shim bool) func() error {
	if shim {
		return nil
	}
	switch {
	case pl.iso.landlock > 0:
		abi, rw := pl.iso.landlock, pl.landlockRW()
		return func() error {
			if err := applyLandlock(abi, rw); err != nil {
				return exitcode.Errorf(exitcode.Internal, "isolation: %w", err)
			}
			return nil
		}
	case pl.iso.nnp:
		return func() error {
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				return exitcode.Errorf(exitcode.Internal, "no_new_privs: %w", err)
			}
			return nil
		}
	}
	return nil
}
