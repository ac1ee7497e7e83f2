// Package systest gives tests real pieces of a system to run a tool
// against, where a fake would prove nothing: a tmpfs of their own to fill
// up or make read-only (Linux, as root), a snapshot of a directory tree to
// prove that a failed run changed nothing, and a tmux terminal whose screen
// a test can read, to see what a tool shows a person.
//
// Everything here skips the calling test, rather than failing it, when the
// machine cannot provide the piece (not root, no tmux), and cleans up after
// itself. It refuses to assert timings: every wait is for a condition,
// bounded by a generous deadline.
package systest
