//go:build unix

package stage

import "syscall"

// SetRlimit sets r as soft and hard limit (CPU gets one more hard second
// so the program sees SIGXCPU before SIGKILL). A value above the current
// hard limit is clamped to it: the task is bounded either way and raising
// it needs privilege. syscall.Setrlimit (not x/sys) is used so the Go
// runtime does not restore its own NOFILE limit at exec.
func SetRlimit(r Rlimit) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(r.Resource, &cur); err != nil {
		return &Error{"rlimit " + r.Name, err}
	}
	lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
	if r.Resource == syscall.RLIMIT_CPU {
		lim.Max++
	}
	if cur.Max != ^uint64(0) { // RLIM_INFINITY
		lim.Cur, lim.Max = min(lim.Cur, cur.Max), min(lim.Max, cur.Max)
	}
	if err := syscall.Setrlimit(r.Resource, &lim); err != nil {
		return &Error{"rlimit " + r.Name, err}
	}
	return nil
}
