package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// DefaultLockTimeout is how long a writer waits for the append lock before
// it fails naming the holder (Options.LockTimeout).
const DefaultLockTimeout = 30 * time.Second

// Holder is who holds (or last held) the append lock, as its holder wrote
// it into the lock file once it had the lock.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
	// State is the holder's process state on Linux ("stopped" for a
	// SIGSTOPped or Ctrl-Z'd process), when it can be read.
	State string `json:"state,omitempty"`
}

func (h *Holder) String() string {
	s := fmt.Sprintf("pid %d (%s) since %s", h.PID, h.Command, h.Since.Format(time.RFC3339))
	if h.State != "" {
		s += ", " + h.State
	}
	return s
}

// appendLock is the held append lock.
type appendLock struct{ f *os.File }

func (l *appendLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// lock takes the append lock, waiting at most the lock timeout, and then
// writes who holds it into the lock file, so that a writer that times out
// (or fsck, or status) can name the holder. A writer waiting longer fails
// with exit 125 naming the holder's pid and command: no operation blocks
// forever behind a stopped process.
func (b *Backend) lock() (*appendLock, error) {
	f, err := os.OpenFile(b.lockPath, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, fsx.FileMode)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "queue %s: lock: %w", b.dir, unwrapPath(err))
	}
	timeout := b.opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Microsecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, exitcode.Errorf(exitcode.Internal, "queue %s: lock: %w", b.dir, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			who := "an unknown process"
			if h, _ := b.LockHolder(); h != nil {
				who = h.String()
			}
			return nil, exitcode.Errorf(exitcode.Internal, "queue %s: the append lock is held by %s; gave up after --lock-timeout %s (a stopped process holds it until continued or killed)", b.dir, who, timeout)
		}
		time.Sleep(wait)
		wait = min(2*wait, 20*time.Millisecond)
	}
	h := Holder{PID: os.Getpid(), Command: commandLine(), Since: time.Now().UTC()}
	data, _ := json.Marshal(&h)
	// Best effort: the holder's name is for messages only.
	if f.Truncate(0) == nil {
		f.WriteAt(append(data, '\n'), 0)
	}
	return &appendLock{f: f}, nil
}

// commandLine names this process for the lock file: the program and its
// arguments up to a "--" (what follows is a task's command, which may hold
// secrets), at most 200 bytes.
func commandLine() string {
	args := []string{filepath.Base(os.Args[0])}
	for _, a := range os.Args[1:] {
		if a == "--" {
			args = append(args, "--", "…")
			break
		}
		args = append(args, a)
	}
	s := strings.Join(args, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// LockHolder reports who holds the append lock now, or nil when nobody
// does. It writes nothing and takes no lock that outlives the call.
func (b *Backend) LockHolder() (*Holder, error) {
	f, err := os.Open(b.lockPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		return nil, nil // nobody holds it (closing f drops ours)
	}
	buf := make([]byte, 1024)
	n, _ := f.ReadAt(buf, 0)
	h := &Holder{}
	if json.Unmarshal([]byte(strings.TrimSpace(string(buf[:n]))), h) != nil || h.PID <= 0 {
		return &Holder{Command: "unknown (the lock file names no holder)"}, nil
	}
	h.State = procState(h.PID)
	return h, nil
}

// procState reads a process's state from /proc (Linux): "stopped",
// "running", "sleeping"…, or "" when it cannot.
func procState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return ""
	}
	switch data[i+2] {
	case 'T', 't':
		return "stopped"
	case 'R':
		return "running"
	case 'S', 'D', 'I':
		return "sleeping"
	case 'Z':
		return "zombie"
	}
	return ""
}
