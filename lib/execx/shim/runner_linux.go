//go:build linux

package shim

import "golang.org/x/sys/unix"

// runnerPID is this process's parent as it started: in a supervisor, the
// runner (0 under a PID namespace of its own, where the parent is outside).
var runnerPID = unix.Getppid()

// runnerGone reports whether the runner that gave this supervisor its task
// is dead, checked after the task arrived and just before it starts: a
// task must not start after its worker is gone (a message the runner sent
// just before a SIGKILL is still read). The kernel settles both signs as
// the runner exits, before its parent-death signal could be handled here:
// it is reparented (getppid no longer returns runnerPID), and the runner's
// end of the control pipe ctl is closed (POLLHUP; an EOF there means "kill
// the task" anyway). The second also covers a supervisor in a PID
// namespace of its own, whose parent it cannot name.
func runnerGone(ctl int) bool {
	if runnerPID != 0 && unix.Getppid() != runnerPID {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(ctl), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
	}
}
