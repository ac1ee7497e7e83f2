//go:build linux

package execx

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
)

// taskCgroup is the cgroup v2 of one task: a directory the runner makes
// beneath its own cgroup, which the supervisor starts the program in
// (clone3 with CLONE_INTO_CGROUP, so there is no moment the program runs
// outside it). Every process of the task is then in it — forking, a new
// session, an orphan reparented anywhere: a cgroup is left only by
// writing cgroup.procs elsewhere, which Landlock and strict's read-only
// view forbid — and the cleanup is one write to cgroup.kill, which the
// kernel applies to every member and to whatever a member forks while
// it runs: no process list to walk, nothing to outrun. Where the kernel
// predates cgroup.kill (Linux 5.14), the cgroup is frozen first
// (cgroup.freeze: a frozen process forks no more) and its members are
// killed while frozen.
type taskCgroup struct {
	path    string
	dir     *os.File // opened: clone3's CLONE_INTO_CGROUP takes it
	fd      int      // dir's
	hasKill bool
}

// cgroupState is the runner's cgroup v2 parent, found once: where task
// cgroups go, or why there is none.
var cgroupState struct {
	once   sync.Once
	parent string
	err    error
	off    atomic.Bool // a cgroup could not be made: never tried again
	seq    atomic.Uint64
}

// errNoCgroup: this runner cannot make cgroups (no cgroup v2, or its own
// cgroup is not writable: not root and no delegated subtree).
var errNoCgroup = errors.New("no writable cgroup v2")

// cgroupParent is the runner's own cgroup v2 directory, if the runner
// may create cgroups in it: as root, or as the owner of a delegated
// subtree (systemd's Delegate=, a container's own cgroup namespace).
func cgroupParent() (string, error) {
	cgroupState.once.Do(func() {
		cgroupState.parent, cgroupState.err = findCgroupParent()
		if cgroupState.err == nil {
			sweepCgroups(cgroupState.parent)
		}
	})
	return cgroupState.parent, cgroupState.err
}

// sweepCgroups removes the empty task cgroups of runners that are gone
// (killed before they could remove them): artexec-PID-N where no process
// PID runs. rmdir removes only an empty cgroup, so a live task's stays.
// A cgroup directory's link count is 2 plus its child cgroups (kernfs
// keeps it so): with none, there is nothing to sweep and the listing,
// which names every interface file as well, is skipped.
func sweepCgroups(parent string) {
	var st unix.Stat_t
	if unix.Stat(parent, &st) == nil && st.Nlink == 2 {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "artexec-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		_ = unix.Rmdir(filepath.Join(parent, e.Name()))
	}
}

func findCgroupParent() (string, error) {
	dir, ok := ownCgroupByHandle()
	if !ok {
		var err error
		if dir, err = ownCgroupByPath(); err != nil {
			return "", err
		}
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return "", fmt.Errorf("%w: %s: %v", errNoCgroup, dir, err)
	}
	return dir, nil
}

// ownCgroupByPath finds this process's cgroup v2 directory from the path
// /proc/self/cgroup gives: under a usual mount point when it is this
// process's own cgroup there (isOwnCgroup), else under the cgroup2 mount
// /proc/self/mountinfo names.
func ownCgroupByPath() (string, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var path string
	for _, line := range strings.Split(string(own), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", fmt.Errorf("%w: not in a cgroup v2", errNoCgroup)
	}
	for _, root := range cgroupRoots {
		if d := filepath.Join(root, path); isOwnCgroup(d) {
			return d, nil
		}
	}
	return cgroupDirByMount(path)
}

// ownCgroupByHandle finds this process's cgroup v2 directory without
// reading /proc/self/cgroup, which the kernel formats on every read (a
// third of a plain run's cgroup set-up, measured): the process's cgroup
// ID is the directory's file handle on a cgroup2 mount, so
// open_by_handle_at opens the directory itself (it needs
// CAP_DAC_READ_SEARCH: root) and the descriptor names its path. The path
// is used only when it leads back to the same directory: a cgroup outside
// what the mount shows (a cgroup namespace, a mount of a subtree) has no
// path under it, and the slower route decides. ok is false wherever this
// route cannot tell (before Linux 6.13, not root, no mount at the usual
// places).
func ownCgroupByHandle() (dir string, ok bool) {
	id, ok := ownCgroupIDOf()
	if !ok {
		return "", false
	}
	var handle [8]byte
	binary.NativeEndian.PutUint64(handle[:], id)
	for _, root := range cgroupRoots {
		if dir, ok = openCgroupByID(root, handle[:]); ok {
			return dir, true
		}
	}
	return "", false
}

// openCgroupByID opens the cgroup with handle on the cgroup2 mount at
// root and returns its path under root, when it has one.
func openCgroupByID(root string, handle []byte) (string, bool) {
	// Not O_PATH: open_by_handle_at refuses a mount descriptor opened so.
	mfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(mfd)
	var fs unix.Statfs_t
	if unix.Fstatfs(mfd, &fs) != nil || fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", false
	}
	fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(fileIDKernfs, handle), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	dir, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || (dir != root && !strings.HasPrefix(dir, root+"/")) {
		return "", false
	}
	var byFd, byPath unix.Stat_t
	if unix.Fstat(fd, &byFd) != nil || unix.Stat(dir, &byPath) != nil ||
		byFd.Dev != byPath.Dev || byFd.Ino != byPath.Ino {
		return "", false
	}
	return dir, true
}

// cgroupDirByMount is the directory of cgroup path (as /proc/self/cgroup
// shows it) under the first cgroup2 mount.
func cgroupDirByMount(path string) (string, error) {
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%w: cgroup %s is outside the mount of %s", errNoCgroup, path, root)
	}
	return filepath.Join(mount, rel), nil
}

// cgroupRoots are where cgroup v2 is mounted nearly everywhere: alone,
// or beside the v1 hierarchies (systemd's hybrid layout).
var cgroupRoots = [...]string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}

// isOwnCgroup says whether dir is this process's own cgroup: a cgroup v2
// directory with this process's cgroup ID (ownCgroupID), or, on kernels
// that cannot say (before Linux 6.13), whose cgroup.procs lists this
// process (a process is in one cgroup only). It is the common case's
// shortcut past reading /proc/self/mountinfo (cgroup2Mount), which the
// kernel formats mount by mount, and it holds wherever the mount shows a
// subtree or the process is in a cgroup namespace: another directory has
// another ID and does not list this process.
func isOwnCgroup(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return false
	}
	if own, ok := ownCgroupID(dir); ok {
		return own
	}
	return listsSelf(dir)
}

// ownCgroupID compares this process's cgroup v2 ID (its pidfd's
// PIDFD_GET_INFO) with dir's (cgroup2 hands out a directory's cgroup ID
// as its file handle); ok is false where either is unavailable. Four
// system calls, where listsSelf has the kernel list every process of the
// cgroup — all of them when the runner sits in the root cgroup, as on
// many CI machines and containers.
func ownCgroupID(dir string) (own, ok bool) {
	id, ok := ownCgroupIDOf()
	if !ok {
		return false, false
	}
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, dir, 0)
	if err != nil || h.Type() != fileIDKernfs || len(h.Bytes()) != 8 {
		return false, false
	}
	return binary.NativeEndian.Uint64(h.Bytes()) == id, true
}

// fileIDKernfs is the file handle type of a kernfs node, a cgroup
// directory among them (linux/exportfs.h): its 8 bytes are the cgroup ID.
const fileIDKernfs = 0xfe

// ownCgroupIDOf is this process's cgroup v2 ID, from its pidfd
// (PIDFD_GET_INFO, Linux 6.13); ok is false where the kernel cannot say.
func ownCgroupIDOf() (id uint64, ok bool) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return 0, false
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CGROUPID}
	err = unix.IoctlPidfdInfo(pidfd, &info)
	unix.Close(pidfd)
	if err != nil || info.Mask&unix.PIDFD_INFO_CGROUPID == 0 {
		return 0, false
	}
	return info.Cgroupid, true
}

// listsSelf says whether dir's cgroup.procs lists this process.
func listsSelf(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	self := strconv.Itoa(os.Getpid())
	for _, f := range bytes.Fields(b) {
		if string(f) == self {
			return true
		}
	}
	return false
}

// cgroup2Mount finds the first cgroup2 mount in /proc/self/mountinfo:
// its mount point and the cgroup path it shows (field 4).
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		return unescapeMount(fields[4]), unescapeMount(fields[3]), nil
	}
	return "", "", fmt.Errorf("%w: no cgroup2 mount", errNoCgroup)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupUsable reports whether tasks get cgroups here: a writable
// cgroup v2 parent was found, and no cgroup failed to be made since.
func cgroupUsable() bool {
	if cgroupState.off.Load() {
		return false
	}
	_, err := cgroupParent()
	return err == nil
}

// newTaskCgroup makes a cgroup for one task, or returns nil when this
// runner cannot (the task then goes without, as before: its supervisor
// alone finds and kills its processes).
func newTaskCgroup() *taskCgroup {
	if cgroupState.off.Load() {
		return nil
	}
	parent, err := cgroupParent()
	if err != nil {
		cgroupState.off.Store(true)
		return nil
	}
	dir := filepath.Join(parent, fmt.Sprintf("artexec-%d-%d", os.Getpid(), cgroupState.seq.Add(1)))
	if err := unix.Mkdir(dir, 0o755); err != nil {
		cgroupState.off.Store(true)
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil
	}
	return &taskCgroup{path: dir, dir: os.NewFile(uintptr(fd), dir), fd: fd,
		hasKill: unix.Faccessat(fd, "cgroup.kill", unix.W_OK, 0) == nil}
}

// procs lists the cgroup's members (zombies are not).
func (cg *taskCgroup) procs() []int {
	b, err := shim.ReadFileAt(cg.fd, "cgroup.procs")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// kill kills every member, and what any member forks meanwhile, and
// reports how many there were.
func (cg *taskCgroup) kill() int {
	n := len(cg.procs())
	if n == 0 {
		return 0 // nothing in it can fork into it
	}
	if cg.hasKill {
		_ = writeAt(cg.fd, "cgroup.kill", "1")
		return n
	}
	// Before cgroup.kill: freeze, kill each (a frozen process forks no
	// more, and SIGKILL ends a frozen one), thaw.
	if writeAt(cg.fd, "cgroup.freeze", "1") == nil {
		cg.waitEvent("frozen 1", time.Now().Add(reapWait))
	}
	for _, pid := range cg.procs() {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	_ = writeAt(cg.fd, "cgroup.freeze", "0")
	return n
}

// wait waits until no member is left or deadline passes, and returns how
// many are left.
func (cg *taskCgroup) wait(deadline time.Time) int {
	if cg.waitEvent("populated 0", deadline) {
		return 0
	}
	return max(len(cg.procs()), 1)
}

// waitEvent waits until cgroup.events has line, polling it (the kernel
// wakes pollers of cgroup.events whenever it changes), until deadline.
func (cg *taskCgroup) waitEvent(line string, deadline time.Time) bool {
	fd, err := unix.Openat(cg.fd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [256]byte
	for {
		n, err := unix.Pread(fd, buf[:], 0)
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(buf[:n]), "\n") {
			if l == line {
				return true
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// Bounded to 50 ms a round: a change between the read and the
		// poll is seen at the next round at the latest.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		_, _ = unix.Poll(pfd, int(min(left, 50*time.Millisecond)/time.Millisecond)+1)
	}
}

// removeEmpty removes the cgroup if no process is in it and it has no
// child cgroup (rmdir refuses either: EBUSY), and reports whether it did.
func (cg *taskCgroup) removeEmpty() bool {
	if unix.Rmdir(cg.path) != nil {
		return false
	}
	cg.dir.Close()
	return true
}

// remove removes the cgroup (and any cgroup a root task made inside it);
// a cgroup with members left stays, named after this runner.
func (cg *taskCgroup) remove() {
	if cg == nil {
		return
	}
	cg.dir.Close()
	rmdirTree(cg.path)
}

func rmdirTree(dir string) {
	if unix.Rmdir(dir) != unix.EBUSY {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			rmdirTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = unix.Rmdir(dir)
}

func writeAt(dfd int, name, data string) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(data))
	return err
}
