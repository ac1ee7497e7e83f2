//go:build linux

package execx

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A pool keeps the private temp dirs of finished tasks, emptied and
// checked, for the pool's next tasks: making a directory costs a task
// more than everything else the runner does for its isolation. On ext4
// without a journal (a common /tmp) the kernel's inode allocator skips
// every inode freed in the last seconds and reads its on-disk record to
// know it, so under a queue that makes and removes one directory per task
// each mkdir walks past the last thousands of them (`makeTmpdir` was 17 %
// of an `artq work -j 8` landlock drain's runner time: docs/performance.md,
// "Round 3").
//
// A kept dir is private in the same sense as a fresh one: one task has it
// at a time, and it reaches the next task only as a fresh dir would be —
// empty, the same mode, owner and group, no extended attribute (so no ACL,
// default or not), the same inode flags and project (chattr), one link
// per parent entry (nothing left inside), still named by its path. A task
// can change those only on its own TMPDIR (Landlock gives it nothing
// outside its trees, and no capability); whatever it changed, or anything
// that does not read back as when the dir was made, and the dir is
// removed instead of kept, as without a pool.
type keptTmp struct {
	path string
	f    *os.File
	at   tmpState // as it was made
}

// tmpState is what tmpFresh compares.
type tmpState struct {
	dev, ino uint64
	mode     uint32
	uid, gid uint32
	flags    uint32 // FS_IOC_GETFLAGS, or errno if it has none
	fsx      [5]uint32
	fsxErr   unix.Errno
	flagsErr unix.Errno
}

// fsIOCFSGetXattr is FS_IOC_FSGETXATTR (_IOR('X', 31, struct fsxattr)),
// which x/sys does not name: the xflags, extent size hints and project ID
// (fsx_nextents, the third word, changes as entries come and go and is
// not compared).
const fsIOCFSGetXattr = 0x801c581f

// statTmp reads the tmpState of the directory f holds (an O_PATH
// descriptor: it is read through a descriptor of "." opened from it); ok
// is false if a read failed, or if the dir holds a subdirectory or
// carries an extended attribute.
func statTmp(f *os.File) (st tmpState, ok bool) {
	fd, err := openDot(f)
	if err != nil {
		return st, false
	}
	defer unix.Close(fd)
	return statTmpFD(fd)
}

// openDot opens the directory f holds (O_PATH) for reading, through f:
// no path is looked up.
func openDot(f *os.File) (int, error) {
	return unix.Openat(int(f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func statTmpFD(fd int) (st tmpState, ok bool) {
	var s unix.Stat_t
	if unix.Fstat(fd, &s) != nil || s.Nlink != 2 {
		return st, false
	}
	st.dev, st.ino, st.mode, st.uid, st.gid = s.Dev, s.Ino, s.Mode, s.Uid, s.Gid
	if n, err := unix.Flistxattr(fd, nil); err != nil && err != unix.ENOTSUP || n != 0 {
		return st, false
	}
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	st.flags, st.flagsErr = flags, errnoOf(err)
	var fsx [7]uint32 // struct fsxattr: 28 bytes
	_, _, st.fsxErr = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIOCFSGetXattr, uintptr(unsafe.Pointer(&fsx)))
	st.fsx = [5]uint32{fsx[0], fsx[1], fsx[3], fsx[4], fsx[5]}
	return st, true
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	if err != nil {
		return unix.EIO
	}
	return 0
}

// tmpdir gives a run a private temp dir: one kept from a finished task of
// this pool if there is one, else a new one (makeTmpdir).
func (p *Pool) tmpdir() (string, *os.File, error) {
	p.mu.Lock()
	if n := len(p.tmps); n > 0 {
		k := p.tmps[n-1]
		p.tmps = p.tmps[:n-1]
		p.mu.Unlock()
		p.tmpKept.Store(k.path, k.at)
		return k.path, k.f, nil
	}
	p.mu.Unlock()
	path, f, err := makeTmpdir()
	if err != nil {
		return "", nil, err
	}
	if st, ok := statTmp(f); ok {
		p.tmpKept.Store(path, st)
	}
	return path, f, nil
}

// putTmpdir takes a run's temp dir back after the run: emptied, checked
// (see keptTmp) and kept for the next run, or removed. Only the dir of a
// run whose pooled supervisor went back to the pool clean is kept
// (clean): nothing of that task is left to write into it.
func (p *Pool) putTmpdir(path string, f *os.File, clean bool) {
	v, known := p.tmpKept.LoadAndDelete(path)
	if clean && known && p.keep(path, f, v.(tmpState)) {
		return
	}
	_ = os.RemoveAll(path)
	f.Close()
}

// keep empties the dir, checks it and keeps it; false: it was not kept.
func (p *Pool) keep(path string, f *os.File, made tmpState) bool {
	fd, err := openDot(f)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !emptyTmp(path, fd) {
		return false
	}
	st, ok := statTmpFD(fd)
	if !ok || st != made || !samePath(path, &st) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.tmps) >= max(p.size, 1) {
		return false
	}
	p.tmps = append(p.tmps, keptTmp{path: path, f: f, at: st})
	return true
}

// closeTmps removes the kept temp dirs (Close).
func (p *Pool) closeTmps() {
	p.mu.Lock()
	tmps := p.tmps
	p.tmps = nil
	p.mu.Unlock()
	for _, k := range tmps {
		_ = os.RemoveAll(k.path)
		k.f.Close()
	}
}

// samePath: path still names the directory st was read from (nothing
// renamed it away or put another in its place in /tmp).
func samePath(path string, st *tmpState) bool {
	var s unix.Stat_t
	return unix.Lstat(path, &s) == nil && s.Dev == st.dev && s.Ino == st.ino
}

// emptyTmp removes everything the task left in its temp dir (fd, the
// dir read through the runner's descriptor), beneath the dir (os.Root: no
// symlink or ".." leads out of it), and reports whether it is empty now.
// A task that left nothing costs one read of the dir and no path lookup.
func emptyTmp(path string, fd int) bool {
	names, err := dirNames(fd)
	if err != nil {
		return false
	}
	if len(names) == 0 {
		return true
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return false
	}
	defer r.Close()
	d, err := r.Open(".") // the root is the dir held: same device and inode
	if err != nil {
		return false
	}
	defer d.Close()
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Fstat(int(d.Fd()), &named) != nil || named.Dev != held.Dev || named.Ino != held.Ino {
		return false
	}
	for _, name := range names {
		if r.RemoveAll(name) != nil {
			return false
		}
	}
	left, err := dirNames(fd)
	return err == nil && len(left) == 0
}

// dirNames lists the directory fd from its start (but "." and "..").
func dirNames(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, err
	}
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
