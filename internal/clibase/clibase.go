// Package clibase is what every art command line shares that does not
// need the kong grammar: the standard streams bound for a command, the
// terminal test, SIGINT and SIGTERM turned into a cancelled context, and
// where a companion program is found. It is apart from package cli so that
// a binary on a hot path (`artexec`, which starts every task a script or
// CI job runs) can use it without linking and initialising kong
// (docs/artexec.md, "Two binaries").
package clibase

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/termsig"
	"github.com/art-runtime/art/lib/exitcode"
)

// IO is the process's standard streams, bound into every command's Run.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	OutTTY bool // stdout is a terminal: -o auto means text
	ErrTTY bool // stderr is a terminal: show progress
}

// StdIO is the real process's streams.
func StdIO() IO {
	return IO{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTTY: IsTerminal(os.Stdout), ErrTTY: IsTerminal(os.Stderr),
	}
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// SignalError is the cancellation cause when SIGINT or SIGTERM arrives.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode implements exitcode.Coder: cancelled.
func (e *SignalError) ExitCode() int { return exitcode.Cancelled }

func signalName(s os.Signal) string {
	if sig, ok := s.(syscall.Signal); ok {
		return unix.SignalName(sig)
	}
	return s.String()
}

// SignalContext returns a context cancelled with a *SignalError cause on the
// first SIGINT or SIGTERM. stop releases the signal handler.
func SignalContext(parent context.Context) (context.Context, func()) {
	return signalContext(parent, func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		return ch, func() { signal.Stop(ch) }
	})
}

// OneShotSignalContext is SignalContext for a process that lives a few
// milliseconds and handles these two signals nowhere else (`artexec
// run`'s fast path): it catches them with package termsig instead of
// os/signal, which starts no thread. Nothing may use os/signal for
// SIGINT or SIGTERM before stop.
func OneShotSignalContext(parent context.Context) (context.Context, func()) {
	return signalContext(parent, func() (<-chan os.Signal, func()) {
		return termsig.Catch(syscall.SIGINT, syscall.SIGTERM)
	})
}

func signalContext(parent context.Context, catch func() (<-chan os.Signal, func())) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch, release := catch()
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&SignalError{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		release()
		close(done)
		cancel(nil)
	}
}
