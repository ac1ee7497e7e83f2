//go:build linux

package stage

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The mount view has two implementations, kept side by side here: Setup,
// in Go, for a supervisor that builds the view in its own namespace
// before it forks the task (one-shot and strict supervisors), and
// childView.setup, raw system calls in the task's own process between
// fork and execve (a pooled supervisor, which never leaves its
// namespace). They make the same calls in the same order with the same
// checks; TestViewImplementationsAgree compares the mounts they leave.

// errReplaced and errCwdReplaced: a writable tree or the working
// directory is not the directory the runner opened (device and inode).
var (
	errReplaced    = errors.New("replaced since the runner opened it")
	errCwdReplaced = errors.New("replaced while the view was built")
)

// Setup builds the view in the calling process's (new, unshared) mount
// namespace. Nothing propagates back: every mount is made private first.
// rwFDs are descriptors on the RW trees, in order, opened by the runner
// in its own namespace: each tree is bound from the directory they hold
// (see bindRW), never from whatever its path names by now.
func (v *View) Setup(rwFDs []int) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if v.ReadOnly {
		if len(rwFDs) != len(v.RW) {
			return fmt.Errorf("%d writable trees but %d descriptors", len(v.RW), len(rwFDs))
		}
		// Bind the writable trees first (clones of still-writable mounts),
		// then make the whole tree read-only, then the binds writable
		// again, nosuid and nodev.
		trees := make([]int, 0, len(v.RW))
		defer func() {
			for _, fd := range trees {
				unix.Close(fd)
			}
		}()
		for i, dir := range v.RW {
			fd, err := bindRW(dir, rwFDs[i])
			if err != nil {
				return fmt.Errorf("bind %s: %w", dir, err)
			}
			trees = append(trees, fd)
		}
		ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, ro); err != nil {
			return fmt.Errorf("read-only /: %w", err)
		}
		rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY, Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		for i, fd := range trees {
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, rw); err != nil {
				return fmt.Errorf("writable %s: %w", v.RW[i], err)
			}
		}
		if slices.Contains(v.RW, ShmDir()) {
			// A writable tree is /dev/shm itself: that is the task's.
		} else if err := unix.Mount("tmpfs", ShmDir(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, v.shmData()); err != nil {
			if !errors.Is(err, unix.ENOENT) || v.Tmp {
				return fmt.Errorf("%s: %w", ShmDir(), err)
			}
		} else {
			for _, i := range shmTrees(v.RW) {
				if err := reattach(v.RW[i], trees[i]); err != nil {
					return fmt.Errorf("bind %s: %w", v.RW[i], err)
				}
			}
		}
	}
	if v.Proc {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount /proc: %w", err)
		}
	}
	return reenterCwd(v.Cwd)
}

// bindRW binds the tree held open by held (a descriptor of the runner's
// mount namespace, which the kernel does not let us bind from here) onto
// itself in this namespace, and returns a descriptor on the new mount.
// dir, the tree's canonical path, is opened once here without following
// any symlink, and must be the very directory held is open on (device and
// inode): anything else was swapped in since the runner opened it. The
// bind then goes from that descriptor to that descriptor (open_tree,
// move_mount): no path is looked up again.
func bindRW(dir string, held int) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	var want, got unix.Stat_t
	if err := unix.Fstat(held, &want); err != nil {
		return -1, err
	}
	if err := unix.Fstat(fd, &got); err != nil {
		return -1, err
	}
	if want.Dev != got.Dev || want.Ino != got.Ino {
		return -1, errReplaced
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("move_mount: %w", err)
	}
	return tree, nil
}

// ShmDir is where the view mounts its fresh /dev/shm: /dev/shm as the
// host resolves it (a link to /run/shm on some systems), so that the
// trees beneath it are known by their canonical paths.
var ShmDir = sync.OnceValue(func() string {
	if d, err := filepath.EvalSymlinks("/dev/shm"); err == nil {
		return d
	}
	return "/dev/shm"
})

// shmData are the fresh /dev/shm's tmpfs options: 64 MiB, or as the
// task's private temp dir (Tmp) TmpSize bytes, else the kernel's default
// (half the memory).
func (v *View) shmData() string {
	switch {
	case !v.Tmp:
		return "mode=1777,size=64m"
	case v.TmpSize > 0:
		return "mode=1777,size=" + strconv.FormatUint(v.TmpSize, 10)
	}
	return "mode=1777"
}

// shmTrees are the indexes of the writable trees the fresh /dev/shm
// covers — beneath ShmDir — and that lie in no other such tree (a tree
// inside another moves with it): each is moved back into view on top of
// the new tmpfs (reattach). Without this a workspace or TMPDIR under
// /dev/shm would vanish from the task's view. When a tree is ShmDir
// itself, the view makes no fresh /dev/shm (that tree is the task's) and
// nothing is covered.
func shmTrees(rw []string) []int {
	if slices.Contains(rw, ShmDir()) {
		return nil
	}
	var out []int
	for i, dir := range rw {
		if !within(dir, ShmDir()) {
			continue
		}
		nested := false
		for j, other := range rw {
			if j != i && within(other, ShmDir()) && within(dir, other) && (dir != other || j < i) {
				nested = true
				break
			}
		}
		if !nested {
			out = append(out, i)
		}
	}
	return out
}

// within: dir is root or a path beneath it (both canonical).
func within(dir, root string) bool {
	return dir == root || strings.HasPrefix(dir, root+"/")
}

// reattach moves the bound tree (its mount's descriptor) from under the
// fresh /dev/shm back to its own path on top of it: the path's
// directories are made in the new tmpfs, which nothing else has seen yet
// (no task exists, and no other tree is mounted there: shmTrees), and the
// mount is moved there as `mount --move` would.
func reattach(dir string, tree int) error {
	dirs := shmDirs(dir)
	for _, d := range dirs {
		if err := unix.Mkdir(d, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return unix.MoveMount(tree, "", unix.AT_FDCWD, dirs[len(dirs)-1], unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// shmDirs are the directories from ShmDir (itself first) down to dir,
// which is at or beneath it.
func shmDirs(dir string) []string {
	shm := ShmDir()
	out := []string{shm}
	p := shm
	for _, c := range strings.Split(strings.TrimPrefix(dir, shm), "/") {
		if c != "" {
			p += "/" + c
			out = append(out, p)
		}
	}
	return out
}

// reenterCwd moves the working directory into the view. The runner set it
// through a descriptor opened in its own namespace, so it still points
// into the runner's mounts, where ".." leads past the read-only view;
// entering the same path (the runner's canonical one: getcwd cannot name
// a directory of another namespace) resolves it through this namespace's
// mounts. It must be the very same directory (device and inode), or the
// path was swapped since.
func reenterCwd(wd string) error {
	var before, after unix.Stat_t
	if err := unix.Stat(".", &before); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	if err := unix.Stat(".", &after); err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	if before.Dev != after.Dev || before.Ino != after.Ino {
		return fmt.Errorf("working directory %s: %w", wd, errCwdReplaced)
	}
	return nil
}

// childView is a View as the parent prepares it for the task's own
// process (Child.InView): every path a NUL-terminated string, every
// argument structure and every result buffer allocated here, so that
// setup only makes system calls on memory that exists. The buffers are
// the child's scratch space (the parent never reads them).
type childView struct {
	readOnly, proc                   bool
	fdcwd                            uintptr // AT_FDCWD
	empty, root, shm, tmpfs, shmData *byte
	procFS, procDir, dot, cwd        *byte
	trees                            []childTree
	shmMounted                       bool // the fresh /dev/shm is mounted: reattach the trees it covers
	shmIsTree                        bool // a writable tree is /dev/shm itself: no fresh one
	shmNeeded                        bool // View.Tmp: a host without /dev/shm fails the view
	how                              unix.OpenHow
	ro, rw                           unix.MountAttr
	before, after                    unix.Statx_t
}

// childTree is one writable tree: its canonical path, the runner's
// descriptor on it, and the child's scratch.
type childTree struct {
	path      *byte
	held      uintptr
	fd, tree  uintptr
	want, got unix.Statx_t
	// shmDirs, for a tree the fresh /dev/shm covers (shmTrees): the
	// directories to make in the new tmpfs, outermost first, the last
	// one the tree's own path, where it is moved back (reattach).
	shmDirs []*byte
}

var atFDCWD = unix.AT_FDCWD // as a variable: a negative constant is no uintptr

// InView makes the child build v in a mount namespace of its own before
// any restriction (see childView.setup), from rwFDs, descriptors on v.RW
// in order, held in this process. The error is an *Error "mount view".
func (c *Child) InView(v *View, rwFDs []int) error {
	if v.ReadOnly && len(rwFDs) != len(v.RW) {
		return &Error{"mount view", fmt.Errorf("%d writable trees but %d descriptors", len(v.RW), len(rwFDs))}
	}
	cv := &childView{readOnly: v.ReadOnly, proc: v.Proc, shmNeeded: v.Tmp, fdcwd: uintptr(atFDCWD),
		how: unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS},
		ro: unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY},
		rw: unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY, Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}}
	var err error
	for _, s := range []struct {
		p   **byte
		str string
	}{{&cv.empty, ""}, {&cv.root, "/"}, {&cv.shm, ShmDir()}, {&cv.tmpfs, "tmpfs"},
		{&cv.shmData, v.shmData()}, {&cv.procFS, "proc"}, {&cv.procDir, "/proc"}, {&cv.dot, "."}, {&cv.cwd, v.Cwd}} {
		if *s.p, err = syscall.BytePtrFromString(s.str); err != nil {
			return &Error{"mount view", err}
		}
	}
	c.viewDirs = nil
	if v.ReadOnly {
		cv.trees = make([]childTree, len(v.RW))
		for i, dir := range v.RW {
			if cv.trees[i].path, err = syscall.BytePtrFromString(dir); err != nil {
				return &Error{"mount view", err}
			}
			cv.trees[i].held = uintptr(rwFDs[i])
		}
		cv.shmIsTree = slices.Contains(v.RW, ShmDir())
		for _, i := range shmTrees(v.RW) {
			for _, d := range shmDirs(v.RW[i]) {
				b, err := syscall.BytePtrFromString(d)
				if err != nil {
					return &Error{"mount view", err}
				}
				cv.trees[i].shmDirs = append(cv.trees[i].shmDirs, b)
			}
		}
		c.viewDirs = v.RW
	}
	c.view, c.viewCwd = cv, v.Cwd
	return nil
}

// Steps of childView.setup (a tree's step carries its index from bit 16).
const (
	stepViewUnshare = 9 + iota
	stepViewPrivate
	stepViewReadOnly
	stepViewShm
	stepViewProc
	stepViewCwd
	stepViewCwdReplaced
	stepViewBind
	stepViewReplaced
	stepViewOpenTree
	stepViewMoveMount
	stepViewWritable
	stepViewReattach
	stepTreeShift = 16
)

// viewError names a failed step of childView.setup as Setup's errors
// read, or returns nil if step is none of them.
func (c *Child) viewError(step uint32, errno syscall.Errno) *Error {
	i := int(step >> stepTreeShift)
	dir := ""
	if i < len(c.viewDirs) {
		dir = c.viewDirs[i]
	}
	var err error = errno
	name := "mount view: "
	switch step & (1<<stepTreeShift - 1) {
	case stepViewUnshare:
		name += "unshare"
	case stepViewPrivate:
		name += "make / private"
	case stepViewReadOnly:
		name += "read-only /"
	case stepViewShm:
		name += "/dev/shm"
	case stepViewProc:
		name += "mount /proc"
	case stepViewCwd:
		name += "working directory " + c.viewCwd
	case stepViewCwdReplaced:
		name, err = name+"working directory "+c.viewCwd, errCwdReplaced
	case stepViewBind:
		name += "bind " + dir
	case stepViewReplaced:
		name, err = name+"bind "+dir, errReplaced
	case stepViewOpenTree:
		name += "bind " + dir + ": open_tree"
	case stepViewMoveMount:
		name += "bind " + dir + ": move_mount"
	case stepViewWritable:
		name += "writable " + dir
	case stepViewReattach:
		name += "bind " + dir
	default:
		return nil
	}
	return &Error{name, err}
}

// setup is Setup in the task's own process, right after fork: a mount
// namespace of its own (unshare: this process only — the supervisor's
// threads stay where they are), / private, each writable tree bound onto
// itself from the very directory the runner holds (bind), / read-only,
// the trees writable again nosuid and nodev, a fresh /dev/shm, /proc if
// asked for, and the working directory entered again by path and checked
// to be the same directory. It returns the failed step and its errno (0
// for a directory found replaced), or 0, 0.
//
//go:nosplit
//go:norace
func (v *childView) setup() (uintptr, syscall.Errno) {
	// Each part is a function of its own, so that the deepest chain of
	// nosplit frames (fork, child, setup, bindAll, bind, a system call)
	// stays within the linker's limit in coverage-instrumented builds
	// (go test -fuzz) too.
	if step, err1 := v.enter(); step != 0 {
		return step, err1
	}
	if v.readOnly {
		if step, err1 := v.bindAll(); step != 0 {
			return step, err1
		}
		if step, err1 := v.seal(); step != 0 {
			return step, err1
		}
		if step, err1 := v.reattachAll(); step != 0 {
			return step, err1
		}
	}
	return v.finish()
}

// enter: a mount namespace of this process's own, / private.
//
//go:nosplit
//go:norace
func (v *childView) enter() (uintptr, syscall.Errno) {
	var err1 syscall.Errno
	if _, _, err1 = syscall.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWNS, 0, 0); err1 != 0 {
		return stepViewUnshare, err1
	}
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(v.empty)), uintptr(unsafe.Pointer(v.root)),
		uintptr(unsafe.Pointer(v.empty)), unix.MS_REC|unix.MS_PRIVATE, 0, 0); err1 != 0 {
		return stepViewPrivate, err1
	}
	return 0, 0
}

// seal: / read-only, the bound trees writable again, a fresh /dev/shm.
//
//go:nosplit
//go:norace
func (v *childView) seal() (uintptr, syscall.Errno) {
	var err1 syscall.Errno
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_MOUNT_SETATTR, v.fdcwd, uintptr(unsafe.Pointer(v.root)),
		unix.AT_RECURSIVE, uintptr(unsafe.Pointer(&v.ro)), unsafe.Sizeof(v.ro), 0); err1 != 0 {
		return stepViewReadOnly, err1
	}
	for i := 0; i < len(v.trees); i++ {
		if _, _, err1 = syscall.RawSyscall6(unix.SYS_MOUNT_SETATTR, v.trees[i].tree, uintptr(unsafe.Pointer(v.empty)),
			unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, uintptr(unsafe.Pointer(&v.rw)), unsafe.Sizeof(v.rw), 0); err1 != 0 {
			return stepViewWritable | uintptr(i)<<stepTreeShift, err1
		}
		if len(v.trees[i].shmDirs) == 0 { // else reattachAll needs it
			syscall.RawSyscall(unix.SYS_CLOSE, v.trees[i].tree, 0, 0)
		}
	}
	if v.shmIsTree {
		return 0, 0
	}
	_, _, err1 = syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(v.tmpfs)), uintptr(unsafe.Pointer(v.shm)),
		uintptr(unsafe.Pointer(v.tmpfs)), unix.MS_NOSUID|unix.MS_NODEV, uintptr(unsafe.Pointer(v.shmData)), 0)
	if err1 != 0 && (err1 != unix.ENOENT || v.shmNeeded) {
		return stepViewShm, err1
	}
	v.shmMounted = err1 == 0
	return 0, 0
}

// reattachAll is reattach in the child: each tree the fresh /dev/shm
// covers is moved back to its path on top of it, in directories made in
// the new tmpfs.
//
//go:nosplit
//go:norace
func (v *childView) reattachAll() (uintptr, syscall.Errno) {
	for i := 0; i < len(v.trees); i++ {
		t := &v.trees[i]
		if len(t.shmDirs) == 0 {
			continue
		}
		if v.shmMounted {
			if err1 := v.reattach(t); err1 != 0 {
				return stepViewReattach | uintptr(i)<<stepTreeShift, err1
			}
		}
		syscall.RawSyscall(unix.SYS_CLOSE, t.tree, 0, 0)
	}
	return 0, 0
}

// reattach makes t's directories in the new tmpfs and moves t's mount
// onto the last one.
//
//go:nosplit
//go:norace
func (v *childView) reattach(t *childTree) syscall.Errno {
	var err1 syscall.Errno
	var last *byte
	for j := 0; j < len(t.shmDirs); j++ {
		last = t.shmDirs[j]
		_, _, err1 = syscall.RawSyscall(unix.SYS_MKDIRAT, v.fdcwd, uintptr(unsafe.Pointer(last)), 0o755)
		if err1 != 0 && err1 != unix.EEXIST {
			return err1
		}
	}
	_, _, err1 = syscall.RawSyscall6(unix.SYS_MOVE_MOUNT, t.tree, uintptr(unsafe.Pointer(v.empty)), v.fdcwd,
		uintptr(unsafe.Pointer(last)), unix.MOVE_MOUNT_F_EMPTY_PATH, 0)
	return err1
}

// finish: /proc if asked for, and the working directory entered again by
// path and checked to be the same directory.
//
//go:nosplit
//go:norace
func (v *childView) finish() (uintptr, syscall.Errno) {
	var err1 syscall.Errno
	if v.proc {
		if _, _, err1 = syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(v.procFS)), uintptr(unsafe.Pointer(v.procDir)),
			uintptr(unsafe.Pointer(v.procFS)), unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, 0, 0); err1 != 0 {
			return stepViewProc, err1
		}
	}
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_STATX, v.fdcwd, uintptr(unsafe.Pointer(v.dot)), 0,
		unix.STATX_INO, uintptr(unsafe.Pointer(&v.before)), 0); err1 != 0 {
		return stepViewCwd, err1
	}
	if _, _, err1 = syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(v.cwd)), 0, 0); err1 != 0 {
		return stepViewCwd, err1
	}
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_STATX, v.fdcwd, uintptr(unsafe.Pointer(v.dot)), 0,
		unix.STATX_INO, uintptr(unsafe.Pointer(&v.after)), 0); err1 != 0 {
		return stepViewCwd, err1
	}
	if !sameFile(&v.before, &v.after) {
		return stepViewCwdReplaced, 0
	}
	return 0, 0
}

// bindAll binds each writable tree (bind), naming the tree of a failed
// step in the step's high bits.
//
//go:nosplit
//go:norace
func (v *childView) bindAll() (uintptr, syscall.Errno) {
	for i := 0; i < len(v.trees); i++ {
		if step, err1 := v.bind(&v.trees[i]); step != 0 {
			return step | uintptr(i)<<stepTreeShift, err1
		}
	}
	return 0, 0
}

// bind is bindRW in the child: t's path opened without following any
// symlink, checked to be the directory t.held is open on, cloned and
// moved onto itself; t.tree is the new mount.
//
//go:nosplit
//go:norace
func (v *childView) bind(t *childTree) (uintptr, syscall.Errno) {
	r1, _, err1 := syscall.RawSyscall6(unix.SYS_OPENAT2, v.fdcwd, uintptr(unsafe.Pointer(t.path)),
		uintptr(unsafe.Pointer(&v.how)), unsafe.Sizeof(v.how), 0, 0)
	if err1 != 0 {
		return stepViewBind, err1
	}
	t.fd = r1
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_STATX, t.held, uintptr(unsafe.Pointer(v.empty)), unix.AT_EMPTY_PATH,
		unix.STATX_INO, uintptr(unsafe.Pointer(&t.want)), 0); err1 != 0 {
		return stepViewBind, err1
	}
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_STATX, t.fd, uintptr(unsafe.Pointer(v.empty)), unix.AT_EMPTY_PATH,
		unix.STATX_INO, uintptr(unsafe.Pointer(&t.got)), 0); err1 != 0 {
		return stepViewBind, err1
	}
	if !sameFile(&t.want, &t.got) {
		return stepViewReplaced, 0
	}
	if r1, _, err1 = syscall.RawSyscall6(unix.SYS_OPEN_TREE, t.fd, uintptr(unsafe.Pointer(v.empty)),
		unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH, 0, 0, 0); err1 != 0 {
		return stepViewOpenTree, err1
	}
	t.tree = r1
	if _, _, err1 = syscall.RawSyscall6(unix.SYS_MOVE_MOUNT, t.tree, uintptr(unsafe.Pointer(v.empty)), t.fd,
		uintptr(unsafe.Pointer(v.empty)), unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH, 0); err1 != 0 {
		return stepViewMoveMount, err1
	}
	syscall.RawSyscall6(unix.SYS_CLOSE, t.fd, 0, 0, 0, 0, 0)
	return 0, 0
}

// sameFile: a and b are the same inode on the same device.
//
//go:nosplit
//go:norace
func sameFile(a, b *unix.Statx_t) bool {
	return a.Ino == b.Ino && a.Dev_major == b.Dev_major && a.Dev_minor == b.Dev_minor
}
