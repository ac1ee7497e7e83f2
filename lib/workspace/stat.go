package workspace

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// owner returns the file's uid and gid where the platform reports them.
func owner(fi os.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// sameInode reports whether fi (from fstat of the opened target) and st
// (from fstatat of the name at rename time) are the same file.
func sameInode(fi os.FileInfo, st *unix.Stat_t) bool {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return uint64(s.Dev) == uint64(st.Dev) && uint64(s.Ino) == uint64(st.Ino)
}
