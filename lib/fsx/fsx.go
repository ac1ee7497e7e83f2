// Package fsx owns durable file operations shared by every art tool: atomic
// replacement with fsync of the file and its directory, owner-only state
// directories, flock-based locks on dedicated lock files, confined opens
// beneath a root directory, and the append-only log (Log: lock file,
// bounded wait, catch-up from an offset, torn-tail trim, one-write appends,
// sticky syncs, group commit) that the queue, the JSONL sink and the agent
// transcript are built on.
//
// It refuses to be clever: no caching, no background syncing. Every function
// returns only after the bytes it promised are on stable storage.
package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/natefinch/atomic"
)

// Permissions for state created by art tools (docs/architecture.md, "Durability rules, everywhere").
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// WriteFile atomically replaces path with data: temp file in the same
// directory, fsync, rename, fsync of the directory. A new file gets perm; an
// existing file keeps its mode. After a crash the path holds either the old or
// the new bytes, never a mix. Errors keep their cause (errors.Is(err,
// syscall.ENOSPC) works), which natefinch/atomic's WriteFile would flatten;
// the rename itself is its ReplaceFile.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFileParts(path, perm, data)
}

// WriteFileParts is WriteFile of the concatenation of parts, without
// making it: a large file built in pieces (the queue's state index) is not
// copied once more to be written.
func WriteFileParts(path string, perm os.FileMode, parts ...[]byte) error {
	mode := perm
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, base)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, cause(err))
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	for _, data := range parts {
		if _, err := tmp.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, cause(err))
		}
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, cause(err))
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, cause(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, cause(err))
	}
	if err := atomic.ReplaceFile(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, cause(err))
	}
	done = true
	return SyncDir(dir)
}

// cause drops the *os.PathError layer that names the temporary file: the
// caller's message names the real path, and the temp name (gone by now) would
// only confuse. errors.Is(err, syscall.ENOSPC) still holds.
func cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
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

// WriteFileAt is WriteFile of name in the directory root holds open:
// the temp file, the rename and the directory's fsync all go through that
// descriptor, so a directory swapped for a symlink since root was opened
// cannot redirect the write. name is a plain name in that directory.
func WriteFileAt(root *os.Root, name string, data []byte, perm os.FileMode) error {
	if err := CheckRel(name); err != nil || strings.ContainsRune(name, '/') {
		return fmt.Errorf("write %s: not a plain file name", name)
	}
	mode := perm
	if fi, err := root.Lstat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	var tmp *os.File
	var tmpName string
	var err error
	for i := 0; ; i++ {
		tmpName = fmt.Sprintf(".%s.%d.%d.tmp", name, os.Getpid(), time.Now().UnixNano()+int64(i))
		if tmp, err = root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err == nil || !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, cause(err))
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmpName, name)
	}
	if err != nil {
		_ = root.Remove(tmpName)
		return fmt.Errorf("write %s: %w", name, cause(err))
	}
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("sync directory of %s: %w", name, err)
	}
	defer d.Close()
	return d.Sync()
}
