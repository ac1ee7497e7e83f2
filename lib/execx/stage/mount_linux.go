//go:build linux

package stage

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Setup builds the view in the calling process's (new, unshared) mount
// namespace. Nothing propagates back: every mount is made private first.
func (v *View) Setup() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if v.ReadOnly {
		// Bind the writable trees first (clones of still-writable mounts),
		// then make the whole tree read-only, then the binds writable again.
		for _, dir := range v.RW {
			if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("bind %s: %w", dir, err)
			}
		}
		ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, ro); err != nil {
			return fmt.Errorf("read-only /: %w", err)
		}
		rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		for _, dir := range v.RW {
			if err := unix.MountSetattr(unix.AT_FDCWD, dir, unix.AT_RECURSIVE, rw); err != nil {
				return fmt.Errorf("writable %s: %w", dir, err)
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
