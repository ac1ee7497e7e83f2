package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// lock takes the append lock (the dedicated lock file, through fsx),
// waiting at most the lock timeout, and then writes who holds it into the
// lock file, so that a writer that times out (or fsck, or status) can name
// the holder. A writer waiting longer fails with exit 125 naming the
// holder's pid and command: no operation blocks forever behind a stopped
// process.
func (b *Backend) lock() error {
	err := b.locker.Lock()
	var te *fsx.LockTimeoutError
	if errors.As(err, &te) {
		who := "an unknown process"
		if h, _ := b.LockHolder(); h != nil {
			who = h.String()
		}
		return exitcode.Fieldf(exitcode.Internal, "LockTimeout", b.opts.LockTimeout.String(), "queue %s: the append lock is held by %s; gave up after %s %s (a stopped process holds it until continued or killed)", b.dir, who, exitcode.Ref("LockTimeout"), b.opts.LockTimeout)
	}
	if err != nil {
		return exitcode.Errorf(exitcode.Internal, "queue %s: %w", b.dir, unwrapLock(err))
	}
	// Best effort: the holder's name is for messages only. The pid and
	// command are encoded once; only the time changes.
	if b.holder == nil {
		h := Holder{PID: os.Getpid(), Command: commandLine()}
		data, _ := json.Marshal(&h)
		b.holder = append(data[:bytes.LastIndex(data, []byte(`"since"`))], `"since":"`...)
	}
	info := b.holderBuf[:0]
	info = append(info, b.holder...)
	info = time.Now().UTC().AppendFormat(info, time.RFC3339Nano)
	info = append(info, "\"}"...)
	// Padded to one length, so that every commit rewrites the lock file
	// in place with one pwrite (fsx.Locker.SetInfo) instead of a
	// truncate and a write.
	for len(info) < holderLen-1 {
		info = append(info, ' ')
	}
	info = append(info, '\n')
	b.locker.SetInfo(info)
	b.holderBuf = info[:0]
	return nil
}

// holderLen is the length the holder's line is padded to (a longer one,
// from a command line full of escapes, is written as it is).
const holderLen = 512

func (b *Backend) unlock() { b.locker.Unlock() }

// unwrapLock turns fsx's "lock PATH: cause" into "lock: cause" (the
// message names the queue directory already).
func unwrapLock(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return fmt.Errorf("lock: %w", u)
	}
	return err
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
	held, info, err := fsx.HeldInfo(b.lockPath, 1024)
	if err != nil || !held {
		return nil, err
	}
	// The first line is the holder's: a shorter line written in place over
	// a longer one leaves that one's tail after it.
	line, _, _ := bytes.Cut(info, []byte{'\n'})
	h := &Holder{}
	if json.Unmarshal(bytes.TrimSpace(line), h) != nil || h.PID <= 0 {
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
