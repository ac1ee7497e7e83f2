//go:build !linux

package fsx

import (
	"os"
	"syscall"
)

// OpenDir opens path, absolute and canonical, as a directory descriptor.
// Without openat2 a symlink is refused in the last component only.
func OpenDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// OpenBeneathDir is OpenBeneath from dir's path (no openat2 here).
func OpenBeneathDir(dir *os.File, rel string, flags int) (*os.File, error) {
	return OpenBeneath(dir.Name(), rel, flags)
}
