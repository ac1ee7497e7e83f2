package fsx

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock is an exclusive flock(2) on a dedicated lock file. The kernel drops it
// when the holder's descriptor closes, including when the process dies: that
// is what makes a lease lock a reliable liveness signal.
type Lock struct {
	f    *os.File
	path string
}

// ErrLocked is returned by TryLock when another open file description holds
// the lock.
var ErrLocked = errors.New("lock is held by another process")

// LockFile blocks until it holds an exclusive lock on path, creating the file
// (0600) if needed.
func LockFile(path string) (*Lock, error) {
	return lock(path, unix.LOCK_EX, true)
}

// TryLock takes the lock on path without waiting; it returns ErrLocked when
// someone else holds it.
func TryLock(path string) (*Lock, error) {
	return lock(path, unix.LOCK_EX|unix.LOCK_NB, true)
}

// SharedLock blocks until it holds a shared lock on path: many readers, no
// exclusive holder.
func SharedLock(path string) (*Lock, error) {
	return lock(path, unix.LOCK_SH, true)
}

func lock(path string, how int, create bool) (*Lock, error) {
	flags := os.O_RDONLY | unix.O_CLOEXEC
	if create {
		flags = os.O_RDWR | os.O_CREATE | unix.O_CLOEXEC
	}
	f, err := os.OpenFile(path, flags, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, cause(err))
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f, path: path}, nil
}

// IsLocked reports whether some process holds a lock on path, without keeping
// one and without creating anything (Inspect-style readers must not write). A
// missing file is not locked.
func IsLocked(path string) (bool, error) {
	l, err := lock(path, unix.LOCK_EX|unix.LOCK_NB, false)
	if errors.Is(err, ErrLocked) {
		return true, nil
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return false, l.Unlock()
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Unlock releases the lock and closes the file. The lock file stays: removing
// it would race with a process that just opened it.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}
