//go:build !linux

package fsx

import "os"

// datasync is fsync where fdatasync is not available (on macOS, Go's Sync
// issues F_FULLFSYNC, which is what durability there needs).
func datasync(f *os.File) error { return f.Sync() }
