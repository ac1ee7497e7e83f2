//go:build linux

package startnofile

var (
	atStart [2]uint64 // struct rlimit64: soft, hard
	read    bool
)

func init() {
	read = prlimitNofile(&atStart) == 0
}

// Limit is the soft and hard RLIMIT_NOFILE this process started with;
// ok is false where they could not be read (an architecture this
// package has no system call for).
func Limit() (soft, hard uint64, ok bool) { return atStart[0], atStart[1], read }
