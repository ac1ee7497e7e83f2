package fsx

import (
	"errors"
	"fmt"
	"os"
	"time"

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
	if err = flockRetry(f, how); err != nil {
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

// LockTimeoutError is a lock that stayed held by another process for the
// whole wait. It matches errors.Is(err, ErrLocked).
type LockTimeoutError struct {
	Path   string
	Waited time.Duration
}

func (e *LockTimeoutError) Error() string {
	return fmt.Sprintf("lock %s: held by another process for %s", e.Path, e.Waited)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockTimeoutError) Is(target error) bool { return target == ErrLocked }

// LockWait takes the exclusive lock on path (creating the file 0600),
// waiting at most wait for another holder: a holder keeps it for one
// commit, so a long wait means a stopped or stuck process, and no
// operation should hang on it forever. Past the wait it returns a
// *LockTimeoutError. It polls with backoff (100µs up to 20ms) rather than
// blocking in flock(2), which could not be bounded.
func LockWait(path string, wait time.Duration) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, cause(err))
	}
	if err := flockWait(f, path, wait); err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f: f, path: path}, nil
}

// flockWait takes the exclusive flock on f, polling with backoff for at
// most wait (0: one try, ErrLocked if held).
func flockWait(f *os.File, path string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return fmt.Errorf("lock %s: %w", path, err)
		}
		if err == unix.EINTR {
			continue
		}
		if wait <= 0 {
			return fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		if !time.Now().Before(deadline) {
			return &LockTimeoutError{Path: path, Waited: wait}
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

func flockRetry(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// SetInfo replaces the lock file's contents with info (who holds it, for
// the messages of those who wait). Best effort: the lock itself is the
// flock, never the contents.
func (l *Lock) SetInfo(info []byte) {
	if l == nil || l.f == nil {
		return
	}
	if l.f.Truncate(0) == nil {
		l.f.WriteAt(info, 0)
	}
}

// HeldInfo reports whether some process holds the lock on path now and,
// if so, what it wrote with SetInfo (up to max bytes). It creates nothing
// and keeps no lock; a missing file is not held.
func HeldInfo(path string, max int) (held bool, info []byte, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		return false, nil, nil // nobody holds it (closing f drops ours)
	}
	buf := make([]byte, max)
	n, _ := f.ReadAt(buf, 0)
	return true, buf[:n], nil
}

// Locker is an exclusive flock on a dedicated lock file that stays open
// between locks: one open(2) per Locker, one flock(2) per lock, for a
// writer that locks once per commit. Within one process its owner
// serialises Lock and Unlock (the flock excludes other processes, not
// other goroutines sharing the descriptor).
type Locker struct {
	path string
	wait time.Duration
	f    *os.File
	// infoLen is the length of the info this Locker wrote last (0: none
	// since the file was opened), for SetInfo.
	infoLen int
}

// NewLocker returns a Locker on path whose Lock waits at most wait. It
// opens (and creates, 0600) nothing until the first lock.
func NewLocker(path string, wait time.Duration) *Locker {
	return &Locker{path: path, wait: wait}
}

// Path is the lock file's path.
func (l *Locker) Path() string { return l.path }

// Lock takes the lock, waiting at most the Locker's wait; past it a
// *LockTimeoutError (errors.Is ErrLocked).
func (l *Locker) Lock() error { return l.take(l.wait) }

// TryLock takes the lock without waiting (ErrLocked when held).
func (l *Locker) TryLock() error { return l.take(0) }

func (l *Locker) take(wait time.Duration) error {
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, FileMode)
		if err != nil {
			return fmt.Errorf("lock %s: %w", l.path, cause(err))
		}
		l.f = f
	}
	return flockWait(l.f, l.path, wait)
}

// Unlock releases the lock; the file stays open for the next Lock.
func (l *Locker) Unlock() error {
	if l.f == nil {
		return nil
	}
	return flockRetry(l.f, unix.LOCK_UN)
}

// SetInfo replaces the lock file's contents with info while the lock is
// held (who holds it, for the messages of those who wait). Best effort.
//
// A holder that locks once per commit writes its info every time, so the
// common case is one pwrite(2): when info is as long as what this Locker
// wrote last, it overwrites it in place without truncating first (a
// truncate frees the file's block and the write allocates it again, the
// dearer half). Another process may have written a longer info meanwhile,
// whose tail then follows ours: info ends in a newline, and readers take
// the first line only (HeldInfo callers).
func (l *Locker) SetInfo(info []byte) {
	if l.f == nil {
		return
	}
	if len(info) != l.infoLen || len(info) == 0 || info[len(info)-1] != '\n' {
		l.infoLen = 0
		if l.f.Truncate(0) != nil {
			return
		}
	}
	if n, err := l.f.WriteAt(info, 0); err == nil && n == len(info) {
		l.infoLen = len(info)
	}
}

// Close closes the lock file, which drops a lock still held.
func (l *Locker) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f, l.infoLen = nil, 0
	return err
}
