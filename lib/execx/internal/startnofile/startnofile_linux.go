//go:build linux

package startnofile

var (
	soft, hard uint64
	read       bool
)

func init() {
	var lim [2]uint64 // struct rlimit64: soft, hard
	if prlimitNofile(&lim) == 0 {
		soft, hard, read = lim[0], lim[1], true
	}
}

// Limit is the soft and hard RLIMIT_NOFILE this process started with;
// ok is false where they could not be read (an architecture this
// package has no system call for).
func Limit() (soft_, hard_ uint64, ok bool) { return soft, hard, read }
