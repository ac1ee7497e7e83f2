//go:build linux

package stage

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	abiOnce sync.Once
	abiVal  int
)

// LandlockABI is the kernel's Landlock ABI version (0: none). We ask the
// kernel ourselves rather than rely on a library's best effort, which
// silently enforces less on older kernels: the Result must say exactly
// what was enforced.
func LandlockABI() int {
	abiOnce.Do(func() {
		v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		if errno == 0 && int(v) > 0 {
			abiVal = int(v)
		}
	})
	return abiVal
}

// ResolveUnixABI is the first Landlock ABI that controls connecting to
// pathname unix sockets (LANDLOCK_ACCESS_FS_RESOLVE_UNIX).
const ResolveUnixABI = 9

// Landlock access rights by the ABI that introduced them.
const (
	llNodes = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	llFSv1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | llNodes
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llDevRights are what the null devices get: read and write, no ioctl.
	llDevRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

var nodeRights = map[string]uint64{
	NodeFIFO:  unix.LANDLOCK_ACCESS_FS_MAKE_FIFO,
	NodeSock:  unix.LANDLOCK_ACCESS_FS_MAKE_SOCK,
	NodeChar:  unix.LANDLOCK_ACCESS_FS_MAKE_CHAR,
	NodeBlock: unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK,
}

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
	if abi >= ResolveUnixABI {
		fs |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if abi >= 10 {
		net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	}
	return fs, net, scoped
}

// landlockRuleset makes the ruleset a task is restricted to (see Child):
// read and execute everywhere, write only beneath rw, read and write (no
// ioctl) of the null devices, no device node created unless nodes names
// its kind, and the network (unless netOpen) and IPC scopes denied as far
// as ABI abi allows. Making it restricts nothing: the task's process
// enforces it on itself (landlock_restrict_self, after no_new_privs). The
// rw trees' rules are made from rwFDs (descriptors on them, in order),
// never from the paths. The ruleset descriptor is close-on-exec.
func landlockRuleset(abi int, rw []string, rwFDs []int, nodes []string, netOpen bool) (int, error) {
	if abi <= 0 {
		return -1, errors.New("not available")
	}
	if len(rwFDs) != len(rw) {
		return -1, fmt.Errorf("%d writable trees but %d descriptors", len(rw), len(rwFDs))
	}
	fs, net, scoped := landlockHandled(abi)
	if netOpen {
		net = 0
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fs, Handled_access_net: net, Scoped: scoped}
	size := unsafe.Sizeof(attr)
	if abi < 10 {
		size = unsafe.Offsetof(attr.Quiet_access_fs) // the struct grew with ABI 10
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(rfd)
	if err := landlockRules(ruleset, fs, rw, rwFDs, nodes); err != nil {
		unix.Close(ruleset)
		return -1, err
	}
	return ruleset, nil
}

// landlockRules adds landlockRuleset's rules to ruleset, which handles fs.
func landlockRules(ruleset int, fs uint64, rw []string, rwFDs []int, nodes []string) error {
	rwRights := writeRights(fs, nodes)
	base, err := heldBase()
	if err != nil {
		return err
	}
	for _, h := range base {
		rights := fs & llDevRights
		if h.path == "/" {
			rights = fs & llRead
		}
		if err := addFDRule(ruleset, h.fd, rights); err != nil {
			return fmt.Errorf("rule %s: %w", h.path, err)
		}
	}
	for i, dir := range rw {
		if err := addFDRule(ruleset, rwFDs[i], rwRights); err != nil {
			return fmt.Errorf("rule %s: %w", dir, err)
		}
	}
	return nil
}

// writeRights are what a writable tree grants of fs, the rights a
// ruleset handles: everything but device ioctls and the device-node
// kinds nodes does not name.
func writeRights(fs uint64, nodes []string) uint64 {
	rights := fs &^ (unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | llNodes)
	for _, n := range nodes {
		rights |= nodeRights[n] & fs
	}
	return rights
}

// heldPath is a path every ruleset has a rule for, and a descriptor on it.
type heldPath struct {
	path string
	fd   int
}

// held are the paths of every ruleset's rules besides the writable trees
// — "/" and the null devices (those that exist) — opened (O_PATH) once per
// process: a pooled supervisor makes a ruleset per task, and looking the
// four paths up again for each was half of the ruleset's cost. The
// rules name what the paths named then: a device node replaced on the
// host later is not the one a task may write (it is refused, never
// widened). A failure is not kept: the next ruleset tries again.
var held struct {
	mu    sync.Mutex
	paths []heldPath // nil until opened
}

func heldBase() ([]heldPath, error) {
	held.mu.Lock()
	defer held.mu.Unlock()
	if held.paths != nil {
		return held.paths, nil
	}
	var paths []heldPath
	for _, path := range []string{"/", "/dev/null", "/dev/zero", "/dev/full"} {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && path != "/" {
			continue
		}
		if err != nil {
			for _, h := range paths {
				unix.Close(h.fd)
			}
			return nil, fmt.Errorf("rule %s: %w", path, err)
		}
		paths = append(paths, heldPath{path, fd})
	}
	held.paths = paths
	return paths, nil
}

// addFDRule grants rights beneath the directory fd is open on.
func addFDRule(ruleset, fd int, rights uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
