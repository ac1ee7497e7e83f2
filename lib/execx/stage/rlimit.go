//go:build unix

package stage

import "syscall"

// SetRlimit sets r as soft and hard limit (see limitOf) on the calling
// process. syscall.Setrlimit (not x/sys) is used so the Go runtime does
// not restore its own NOFILE limit at exec.
func SetRlimit(r Rlimit) error {
	lim, err := limitOf(r)
	if err != nil {
		return err
	}
	if err := syscall.Setrlimit(r.Resource, &lim); err != nil {
		return &Error{"rlimit " + r.Name, err}
	}
	return nil
}

// limitOf is r as the soft and hard limit to set (CPU gets one more hard
// second so the program sees SIGXCPU before SIGKILL). A value above the
// calling process's hard limit is clamped to it: the task is bounded
// either way and raising it needs privilege.
func limitOf(r Rlimit) (syscall.Rlimit, error) {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(r.Resource, &cur); err != nil {
		return cur, &Error{"rlimit " + r.Name, err}
	}
	lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
	if r.Resource == syscall.RLIMIT_CPU {
		lim.Max++
	}
	if cur.Max != ^uint64(0) { // RLIM_INFINITY
		lim.Cur, lim.Max = min(lim.Cur, cur.Max), min(lim.Max, cur.Max)
	}
	return lim, nil
}
