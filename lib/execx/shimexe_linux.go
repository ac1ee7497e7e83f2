//go:build linux

package execx

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// ShimName is the file name of the minimal shim binary (cmd/artexec-shim)
// that a runner uses, when it is installed beside the runner's own
// executable, as each task's supervisor.
const ShimName = "artexec-shim"

var (
	shimOnce sync.Once
	shimPath string
)

// shimExe is the binary started as a task's supervisor (and, on macOS,
// as its exec stage): the minimal artexec-shim when a trusted
// one sits beside this process's executable, else this binary itself.
// Both run the same code (package shim); the minimal one starts in about
// the time of an empty Go program instead of paying for the whole tool.
// It is looked for once per process, and only there: never on PATH, never
// in the working directory or a workspace.
func shimExe() string {
	// Why a shim is refused does not matter to the run: the fallback is
	// always correct.
	shimOnce.Do(func() { shimPath, _ = findShim() })
	if shimPath != "" {
		return shimPath
	}
	return selfExe()
}

// findShim returns the path of a trusted artexec-shim in the directory of
// this process's executable (symlinks resolved), or why there is none.
// Trusted means what the executable itself has to be for this process to
// be what it claims: the file is a regular file (not a symlink), it and
// its directory are owned by root or by this process's effective user and
// writable by nobody else (no group or other write bit), and the file is
// executable. Anything else is refused and the runner re-executes itself,
// which is always correct, only slower; a refused file is never run.
func findShim() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", err
	}
	dir := filepath.Dir(exe)
	if err := trustedFile(dir, true); err != nil {
		return "", err
	}
	p := filepath.Join(dir, ShimName)
	if err := trustedFile(p, false); err != nil {
		return "", err
	}
	if err := unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS); err != nil {
		return "", fmt.Errorf("%s: not executable: %w", p, err)
	}
	return p, nil
}

// trustedFile checks path's own inode (lstat: a symlink is refused, not
// followed): a directory or regular file as asked, owned by root or our
// effective uid, with no group or other write permission.
func trustedFile(path string, dir bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	want, kind := uint32(unix.S_IFREG), "a regular file"
	if dir {
		want, kind = unix.S_IFDIR, "a directory"
	}
	switch {
	case st.Mode&unix.S_IFMT != want:
		return fmt.Errorf("%s: not %s", path, kind)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: owned by uid %d, not root or %d", path, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s: writable by group or others (mode %#o)", path, st.Mode&0o7777)
	}
	return nil
}
