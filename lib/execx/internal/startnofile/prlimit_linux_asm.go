//go:build linux && (amd64 || arm64)

package startnofile

// prlimitNofile reads this process's RLIMIT_NOFILE into lim
// (prlimit64(0, RLIMIT_NOFILE, NULL, lim)) and returns the system call's
// result: 0, or a negative errno.
//
//go:noescape
func prlimitNofile(lim *[2]uint64) int
