// Package fsx owns durable file operations shared by every art tool: atomic
// replacement with fsync of the file and its directory, owner-only state
// directories, flock-based locks on dedicated lock files, and confined opens
// beneath a root directory.
//
// It refuses to be clever: no caching, no background syncing. Every function
// returns only after the bytes it promised are on stable storage.
package fsx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/natefinch/atomic"
)

// Permissions for state created by art tools (DESIGN.md §2).
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// WriteFile atomically replaces path with data: temp file in the same
// directory, fsync, rename, fsync of the directory. A new file gets perm; an
// existing file keeps its mode. After a crash the path holds either the old or
// the new bytes, never a mix.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	_, statErr := os.Stat(path)
	existed := statErr == nil
	if err := atomic.WriteFile(path, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !existed {
		// atomic creates its temp file 0600; a new file that wants another mode
		// gets it before the directory entry is made durable.
		if perm != FileMode {
			if err := os.Chmod(path, perm); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory so that a rename or create in it survives a crash.
// natefinch/atomic renames but does not sync the directory; this is the step it
// lacks.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// MkdirState creates dir and its missing parents with owner-only permissions.
// It does not loosen or tighten a directory that already exists.
func MkdirState(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	return nil
}
