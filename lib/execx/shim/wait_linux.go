//go:build linux

package shim

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawWaitNS bounds a serving supervisor's raw wait (waitReadable).
const rawWaitNS = 50_000_000

// waitReadable waits until one of fds has an event, as poll(2) with no
// timeout, and sets their Revents.
//
// With raw (a serving supervisor, whose waits are many and short: for
// its next task, for a task's end) it first waits up to rawWaitNS in a
// raw system call that the Go runtime does not see. An ordinary blocking
// call hands the supervisor's only P back to the scheduler: the runtime's
// sysmon thread takes it away after one tick, sleeps, and is woken again
// when the call returns, then polls every 20 µs for the next
// millisecond — about a fifth of a pooled supervisor's time went there.
// During a raw wait the P stays with the waiting goroutine and sysmon
// backs off to one look every 10 ms. The price is that no other
// goroutine runs meanwhile: the signal handler's (serve's stop), the
// garbage collector. Both make the runtime interrupt the wait (its
// preemption signal, after at most about 10 ms), and any interruption,
// like the time limit, ends the raw wait for an ordinary one, which lets
// them run.
func waitReadable(fds []unix.PollFd, raw bool) error {
	if raw {
		ts := unix.Timespec{Nsec: rawWaitNS}
		n, _, errno := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == 0 && n > 0 {
			return nil
		}
	}
	for {
		_, err := unix.Poll(fds, -1)
		if err != unix.EINTR {
			return err
		}
	}
}
