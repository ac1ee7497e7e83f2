//go:build linux

package shim

import (
	"runtime"
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
// its next task, for a task's end) it first waits up to rawWaitNS in
// raw system calls that the Go runtime does not see. An ordinary blocking
// call hands the supervisor's only P back to the scheduler: the runtime's
// sysmon thread takes it away after one tick, sleeps, and is woken again
// when the call returns, then polls every 20 µs for the next
// millisecond — about a fifth of a pooled supervisor's time went there.
// During a raw wait the P stays with the waiting goroutine and sysmon
// backs off to one look every 10 ms. No other goroutine runs meanwhile
// (serve's signal handler, the garbage collector): any signal interrupts
// the wait (the runtime's preemption signal comes after at most about
// 10 ms of it). The goroutine yields the thread before each raw wait (the
// first, and again for the time left after a signal), so whatever a
// signal made runnable runs first, and the runtime seldom finds the
// goroutine running for 10 ms: it would preempt it with a signal, and
// take its P if it found it in an ordinary system call then. Past
// rawWaitNS it waits the ordinary way: an idle supervisor lets sysmon
// sleep. Raw waits are for a goroutine not locked to its thread, for
// which yielding is cheap.
func waitReadable(fds []unix.PollFd, raw bool) error {
	if raw {
		// ppoll writes the time left back into ts when a signal
		// interrupts it.
		ts := unix.Timespec{Nsec: rawWaitNS}
		for {
			runtime.Gosched()
			n, _, errno := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
				uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			if errno == 0 && n > 0 {
				return nil
			}
			if errno != unix.EINTR {
				break // the time is up (or an error the ordinary wait reports)
			}
		}
	}
	for {
		_, err := unix.Poll(fds, -1)
		if err != unix.EINTR {
			return err
		}
	}
}
