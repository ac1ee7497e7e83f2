// Package exitcode owns the one table of process exit codes shared by every art
// tool (README.md, "Exit codes") and the error type that carries a code from a library up to
// main.
//
// Libraries never exit. They return errors that either are, or wrap, a value with
// an ExitCode() method; the CLI layer asks Of(err) for the code. An error without
// a code is the tool's own failure (125), never a silent success.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes of README.md, "Exit codes". Tests and scripts rely on exactly these.
const (
	OK              = 0   // success
	Failed          = 1   // the work ran and failed
	Usage           = 2   // usage or invalid input
	Conflict        = 3   // stale revision, illegal transition, terminal state, duplicate id
	NotFound        = 4   // no such task, goal, file
	TimedOut        = 124 // as GNU timeout
	Internal        = 125 // the tool itself failed (I/O error, corrupt log)
	Refused         = 126 // refused by policy, or found but not executable
	ProgramNotFound = 127 // program not found
	Cancelled       = 130 // SIGINT/SIGTERM or artq cancel
)

// Coder is implemented by errors that know which exit code they mean.
type Coder interface {
	ExitCode() int
}

// Error attaches an exit code to an underlying error without changing its message.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap keeps errors.Is/As working through the code.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements Coder.
func (e *Error) ExitCode() int { return e.Code }

// Wrap gives err the exit code code. A nil err stays nil.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Errorf is fmt.Errorf with an exit code; %w works as usual.
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Sentinel returns a comparable error value with a fixed message and code, for
// package-level ErrXxx variables that callers test with errors.Is.
func Sentinel(code int, msg string) error {
	return &sentinel{code: code, msg: msg}
}

type sentinel struct {
	code int
	msg  string
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) ExitCode() int { return s.code }

// Of returns the exit code an error stands for: 0 for nil, the first code found
// in the chain, else Internal.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Internal
}

// Quiet returns an error that makes main exit with code without printing a
// message: the command already wrote what the user needs (a Result document
// whose child exited 3, say).
func Quiet(code int) error { return quietError(code) }

type quietError int

func (q quietError) Error() string { return fmt.Sprintf("exit status %d", int(q)) }
func (q quietError) ExitCode() int { return int(q) }

// IsQuiet reports whether err asks main to exit without a message.
func IsQuiet(err error) bool {
	var q quietError
	return errors.As(err, &q)
}
