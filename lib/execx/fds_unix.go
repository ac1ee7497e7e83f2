//go:build linux || darwin

package execx

import "github.com/art-runtime/art/lib/execx/shim"

// A task gets file descriptors 0, 1 and 2 and nothing else. Every
// descriptor the runner itself opens is close-on-exec (Go's os and net
// packages open everything with O_CLOEXEC, and so does execx), but
// fork+exec passes on any descriptor that is not: one the runner's own
// parent left open (a shell's `exec 10<file`, a CI agent's pipes, a
// systemd socket) or one a library user made with a raw syscall
// (syscall.Open without O_CLOEXEC, unix.Dup, syscall.Pipe). So before every
// start the runner marks every descriptor from 3 up close-on-exec
// (sweepFDs), and each shim does the same to itself before it starts the
// program, which closes the one gap the runner's sweep leaves: a
// descriptor another goroutine creates without close-on-exec between the
// sweep and the fork. A task started directly (no shim) has that gap, the
// same one os/exec has: Go cannot run code between fork and exec.
//
// Marking, not closing: the runner's descriptors stay usable by whoever
// owns them (the Go runtime's own, a socket-activated listener), and Go's
// ForkExec clears close-on-exec on exactly the descriptors it is told to
// pass, so nothing execx or os/exec passes deliberately is affected. What
// is affected by design: a process that runs tasks through execx cannot
// rely on a descriptor without close-on-exec reaching a program it execs
// by other means (syscall.Exec); it must clear the flag itself right before.

// sweepFDs is the runner's sweep before a start; a test replaces it to
// prove that the shims' own sweep stands alone.
var sweepFDs = func() { shim.MarkCloexecFrom(3) }
