//go:build linux

package stage

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
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
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("/dev/shm: %w", err)
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
		return -1, errors.New("replaced since the runner opened it")
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
		return fmt.Errorf("working directory %s: replaced while the view was built", wd)
	}
	return nil
}
