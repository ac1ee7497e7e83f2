//go:build linux

package stage

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exec applies s to the calling process and executes the program; it
// returns only on failure. The caller's goroutine is locked to its thread
// for good: Landlock, seccomp and capabilities are per thread, and the
// thread that applied them must be the one that calls execve.
func Exec(s *Spec) error {
	runtime.LockOSThread()
	if s.Setsid {
		if _, err := unix.Setsid(); err != nil {
			return &Error{"setsid", err}
		}
	}
	// Everything but the address-space limit first: the stage still
	// allocates until execve.
	var as *Rlimit
	for i := range s.Rlimits {
		if s.Rlimits[i].Resource == unix.RLIMIT_AS {
			as = &s.Rlimits[i]
			continue
		}
		if err := SetRlimit(s.Rlimits[i]); err != nil {
			return err
		}
	}
	if s.NNP {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return &Error{"no_new_privs", err}
		}
	}
	if s.Landlock > 0 {
		if err := applyLandlock(s.Landlock, s.RW, s.RWFDs, s.Nodes, s.NetOpen); err != nil {
			return &Error{"landlock", err}
		}
	}
	if s.DropCaps {
		if err := dropCaps(s.KeepCaps); err != nil {
			return &Error{"capabilities", err}
		}
	}
	if len(s.Filters) > 0 {
		if err := LoadSeccomp(s.Filters); err != nil {
			return &Error{"seccomp", err}
		}
	}
	if as != nil {
		if err := SetRlimit(*as); err != nil {
			return err
		}
	}
	return &Error{"exec", syscall.Exec(s.Path, s.Argv, s.Env)}
}
