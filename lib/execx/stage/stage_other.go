//go:build !linux

package stage

import (
	"runtime"
	"syscall"
)

// Exec applies the rlimits and executes the program (the sandbox on
// macOS is sandbox-exec, which wraps the program itself).
func Exec(s *Spec) error {
	runtime.LockOSThread()
	for _, r := range s.Rlimits {
		if err := SetRlimit(r); err != nil {
			return err
		}
	}
	return &Error{"exec", syscall.Exec(s.Path, s.Argv, s.Env)}
}

// LandlockABI is 0: Landlock is Linux's.
func LandlockABI() int { return 0 }
