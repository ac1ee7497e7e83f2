// Package termsig tells a short-lived process that it was asked to stop
// (SIGINT, SIGTERM) without os/signal. os/signal's first Notify starts a
// goroutine locked to an OS thread for the signal mask, which makes the
// runtime start its template thread and hand the processor between
// threads each time that goroutine parks: thread starts and futex
// hand-offs in a process that lives a few milliseconds (`artexec run`,
// in front of every task a script starts; docs/performance.md, "Round 4:
// one-shot start", has the figures).
//
// On linux/amd64 Catch installs, for each signal asked for, a handler of
// its own (a few instructions of assembly: write the signal's number to a
// pipe, on the thread's signal stack) in place of the Go runtime's, and a
// goroutine reads that pipe through the runtime's poller, so waiting for a
// signal takes no thread. Elsewhere it is os/signal.
//
// Catch is for one-shot processes whose only handling of these signals
// it is: while it is in force, os/signal's Notify for the same signals
// would not get them (the runtime believes its own handler is installed
// and does not install it again). Stop restores the handlers Catch
// replaced, after which os/signal works as before.
package termsig

import (
	"os"
	"sync"
	"syscall"
)

// Catch starts delivering the given signals to the returned channel
// (buffered; a signal that finds it full is dropped, as with
// signal.Notify) until stop is called. Catch must not be called again
// before stop.
func Catch(sigs ...syscall.Signal) (c <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, len(sigs)+1)
	undo := catch(ch, sigs)
	var once sync.Once
	return ch, func() { once.Do(undo) }
}
