//go:build darwin

package shim

import "github.com/art-runtime/art/lib/exitcode"

// supervise: macOS has no child subreaper and no parent-death signal, so
// execx starts no supervisor there.
func supervise() int { return exitcode.Internal }

// serve: see supervise.
func serve() int { return exitcode.Internal }
