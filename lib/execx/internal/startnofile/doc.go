// Package startnofile keeps the soft open-files limit (RLIMIT_NOFILE)
// this process was started with. Package syscall raises the soft limit
// at its initialisation, to one below the hard limit, and keeps the old
// value to itself, for the children its ForkExec starts; a child started
// otherwise (lib/execx/stage) must be given it. This package imports
// nothing, so it is initialised before syscall — Go initialises, among
// the packages whose imports are initialised, the first by import path,
// and every path under github.com sorts before syscall and the packages
// syscall needs — and it reads the limit with a system call of its own,
// in assembly, before syscall can raise it (TestBeforeSyscall).
package startnofile
