// Package systest gives tests real pieces of a system to run a tool
// against, where a fake would prove nothing: a tmpfs of their own to fill
// up or make read-only (Linux, as root), a snapshot of a directory tree to
// prove that a failed run changed nothing, and a tmux terminal whose screen
// a test can read, to see what a tool shows a person. It is also the one
// home of the test helpers the tools share: the testscript commands every
// cmd/*/main_test.go registers (ScriptCmds: exits, mode, waitfor, procs,
// ...), the process scans (PidsWithArg, WaitPids, NoSurvivor), builds of a
// variant binary (GoBuild, GoTest: an artq with -tags failpoint), this test binary run
// again under a low soft open-files limit (SelfWithSoftNofile), and the
// check that every script asserts the exit codes it states
// (UnassertedExits).
//
// Everything here skips the calling test, rather than failing it, when the
// machine cannot provide the piece (not root, no tmux), and cleans up after
// itself. It refuses to assert timings: every wait is for a condition,
// bounded by a generous deadline.
package systest
