package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Log is one append-only file of newline-terminated records: the shape of
// every durable history art keeps (the queue's events.log, the JSONL event
// sink, the agent transcript). It owns the mechanics all three share and
// nothing of what a record means: the dedicated lock file (Lock, TryLock),
// catch-up from a byte offset (Lines), torn-tail trim (Trim), one undoable
// write per append (Append) and fdatasync with a sticky failure (Sync,
// SyncThrough). Each rule, and why it is the rule, is written once, in
// docs/architecture.md, "Durable append-only files".
//
// Several processes may append to one Log as long as each holds the lock
// for its write. A Log is not safe for concurrent use by goroutines: its
// owner serialises calls (Group does, for appenders that share syncs).
type Log struct {
	path     string
	f        *os.File
	info     os.FileInfo
	opts     LogOptions
	lockPath string
	rd       LineReader // reused by Lines
	locker   *Locker
	syncs    atomic.Uint64

	// Shared syncs (SyncThrough) and the sticky failure.
	smu     sync.Mutex
	scond   *sync.Cond
	written uint64 // generations handed out by Wrote
	synced  uint64 // generations covered by a successful sync
	syncing bool
	broken  error
}

// LogOptions configure OpenLog.
type LogOptions struct {
	// ReadOnly opens for reading only: nothing is created, locked,
	// truncated or written.
	ReadOnly bool
	// Create makes a missing file (0600); without it a missing file is an
	// error wrapping os.ErrNotExist.
	Create bool
	// LockPath is the dedicated lock file ("": path + ".lock").
	LockPath string
	// LockWait bounds Lock's wait for another holder (0: DefaultLockWait).
	LockWait time.Duration
	// MaxLine bounds one record; a longer line is reported by the
	// LineReader as overlong (damage, not a torn tail). 0: 64 MiB.
	MaxLine int
	// Check, if set, vets the open descriptor before anything is read
	// (ownership, permissions); its error is returned as is.
	Check func(f *os.File, st *unix.Stat_t) error
	// Faults, if set, stand in for the system calls of appends, so that
	// callers can test what a full disk or a failing device does to them.
	Faults *LogFaults
}

// LogFaults replace a Log's write, truncate and sync (nil fields keep the
// real call). For tests.
type LogFaults struct {
	Write    func(f *os.File, p []byte) (int, error)
	Truncate func(f *os.File, size int64) error
	Sync     func(f *os.File) error
}

// DefaultLockWait is how long Lock waits for another holder.
const DefaultLockWait = 30 * time.Second

// DefaultMaxLine bounds a record when LogOptions.MaxLine is 0.
const DefaultMaxLine = 64 << 20

// Errors of a Log.
var (
	// ErrNotRegular: the path is not a regular file (a FIFO, a device, a
	// directory): a log is never opened on one.
	ErrNotRegular = errors.New("not a regular file")
	// ErrSymlink: the final path component is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrLogBroken: an earlier write could not be undone or a sync
	// failed; the Log refuses everything until reopened.
	ErrLogBroken = errors.New("log refuses further appends after a failed write or sync")
)

// OpenLog opens the log at path. The open never follows a symlink in the
// final component and never blocks on a FIFO (it is opened non-blocking and
// refused as not regular).
func OpenLog(path string, o LogOptions) (*Log, error) {
	flags := unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	if o.ReadOnly {
		flags |= unix.O_RDONLY
	} else {
		flags |= unix.O_RDWR | unix.O_APPEND
		if o.Create {
			flags |= unix.O_CREAT
		}
	}
	fd, err := unix.Open(path, flags, uint32(FileMode))
	for err == unix.EINTR {
		fd, err = unix.Open(path, flags, uint32(FileMode))
	}
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK):
			err = ErrSymlink
		case errors.Is(err, unix.EISDIR):
			err = ErrNotRegular
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fail := func(err error) (*Log, error) {
		f.Close()
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(&os.PathError{Op: "stat", Path: path, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fail(&os.PathError{Op: "open", Path: path, Err: ErrNotRegular})
	}
	if o.Check != nil {
		if err := o.Check(f, &st); err != nil {
			return fail(err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fail(&os.PathError{Op: "open", Path: path, Err: err})
	}
	info, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	lp := o.LockPath
	if lp == "" {
		lp = path + ".lock"
	}
	return &Log{path: path, f: f, info: info, opts: o, lockPath: lp, locker: NewLocker(lp, o.LockWait)}, nil
}

// Path is the data file's path.
func (l *Log) Path() string { return l.path }

// LockPath is the dedicated lock file's path.
func (l *Log) LockPath() string { return l.lockPath }

// File is the open descriptor (O_APPEND when writable). Callers read it
// with ReadAt only, so its offset never matters.
func (l *Log) File() *os.File { return l.f }

// Info is the identity of the file as opened: os.SameFile against a fresh
// os.Stat of the path tells whether it was replaced since.
func (l *Log) Info() os.FileInfo { return l.info }

// Size is the file's current size.
func (l *Log) Size() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(l.f.Fd()), &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: l.path, Err: err}
	}
	return st.Size, nil
}

// Lock takes the log's lock, waiting at most LogOptions.LockWait; past it
// the error is a *LockTimeoutError (errors.Is ErrLocked). The lock file
// stays open between locks (one open per Log, one flock per commit).
// Within one process the Log's owner serialises Lock and Unlock: the
// flock excludes other processes, not other goroutines.
func (l *Log) Lock() error {
	if l.opts.ReadOnly {
		return fmt.Errorf("lock %s: opened read-only", l.lockPath)
	}
	return l.locker.Lock()
}

// TryLock takes the log's lock without waiting (ErrLocked when held).
func (l *Log) TryLock() error {
	if l.opts.ReadOnly {
		return fmt.Errorf("lock %s: opened read-only", l.lockPath)
	}
	return l.locker.TryLock()
}

// Unlock releases the lock taken by Lock or TryLock.
func (l *Log) Unlock() error { return l.locker.Unlock() }

// Lines returns a reader of the records from byte offset off up to limit
// (-1: the end of the file as it grows), reusing the Log's buffer: the
// previous reader returned by Lines is invalid from then on.
func (l *Log) Lines(off, limit int64) *LineReader {
	l.rd.Reset(l.f, off, limit, l.opts.MaxLine)
	return &l.rd
}

// Append writes p (whole records, each ending in '\n') with one write(2)
// at the end of the file, which ended at end (the caller holds the lock,
// so no one else appends meanwhile). A failed or short write is cut off
// again so the file is what it was; if even that fails the Log is broken.
func (l *Log) Append(p []byte, end int64) error {
	if err := l.Broken(); err != nil {
		return err
	}
	n, err := l.write(p)
	if err == nil && n == len(p) {
		return nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	if n > 0 {
		if terr := l.Truncate(end); terr != nil {
			return l.breakWith(fmt.Errorf("%w: wrote %d of %d bytes to %s: %w; and could not cut them off: %v", ErrLogBroken, n, len(p), l.path, unwrapPathErr(err), terr))
		}
		return fmt.Errorf("wrote %d of %d bytes, then cut them off: %w", n, len(p), unwrapPathErr(err))
	}
	return unwrapPathErr(err)
}

func (l *Log) write(p []byte) (int, error) {
	if fl := l.opts.Faults; fl != nil && fl.Write != nil {
		return fl.Write(l.f, p)
	}
	return l.f.Write(p)
}

// Truncate cuts the file back to size without syncing: undoing a failed
// write, or a write whose sync failed (the Log is broken by then; this only
// spares readers the unsynced bytes).
func (l *Log) Truncate(size int64) error {
	if fl := l.opts.Faults; fl != nil && fl.Truncate != nil {
		return fl.Truncate(l.f, size)
	}
	return l.f.Truncate(size)
}

func (l *Log) breakWith(err error) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	if l.broken == nil {
		l.broken = err
	}
	return l.broken
}

func (l *Log) datasync() error {
	l.syncs.Add(1)
	var err error
	if fl := l.opts.Faults; fl != nil && fl.Sync != nil {
		err = fl.Sync(l.f)
	} else {
		err = datasync(l.f)
	}
	if err != nil {
		return fmt.Errorf("%w: sync %s: %w", ErrLogBroken, l.path, unwrapPathErr(err))
	}
	return nil
}

// Sync makes everything written so far durable (fdatasync: the data and
// the size, not the timestamps). A failure is sticky: after a failed sync
// the kernel may have dropped the dirty pages and cleared the error, so
// retrying would report success for lost data.
func (l *Log) Sync() error {
	if err := l.Broken(); err != nil {
		return err
	}
	if err := l.datasync(); err != nil {
		return l.breakWith(err)
	}
	return nil
}

// Wrote marks a write done and returns its generation, for SyncThrough.
func (l *Log) Wrote() uint64 {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.written++
	return l.written
}

// SyncThrough returns once a sync covering write generation gen has run:
// the group-commit hook for writers that append under the lock and sync
// after releasing it. The first waiter whose write is not yet durable runs
// one sync covering every write so far; the others wait for it and share
// it. A failed sync is sticky.
func (l *Log) SyncThrough(gen uint64) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	if l.scond == nil {
		l.scond = sync.NewCond(&l.smu)
	}
	for l.synced < gen && l.broken == nil {
		if l.syncing {
			l.scond.Wait()
			continue
		}
		l.syncing = true
		target := l.written
		l.smu.Unlock()
		err := l.datasync()
		l.smu.Lock()
		l.syncing = false
		if err != nil {
			if l.broken == nil {
				l.broken = err
			}
		} else {
			l.synced = max(l.synced, target)
		}
		l.scond.Broadcast()
	}
	return l.broken
}

// Trim cuts the file back to off (a torn tail: what a crash mid-append
// left past the last whole record) and syncs, so that a record appended
// next is not glued to a fragment. The caller holds the lock.
func (l *Log) Trim(off int64) error {
	if err := l.Truncate(off); err != nil {
		return &os.PathError{Op: "truncate", Path: l.path, Err: unwrapPathErr(err)}
	}
	return l.Sync()
}

// Broken is the sticky failure, or nil.
func (l *Log) Broken() error {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.broken
}

// Syncs is how many syncs this Log has run (tests, benchmarks).
func (l *Log) Syncs() uint64 { return l.syncs.Load() }

// Close closes the data file. Locks taken from it are separate and stay
// held until unlocked.
func (l *Log) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.locker.Close()
	err := l.f.Close()
	l.f = nil
	return err
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// LineReader reads '\n'-terminated lines with ReadAt, so it never moves the
// descriptor's offset, from a byte offset up to a limit, in one buffer that
// grows to the longest line and is reused across Resets.
type LineReader struct {
	f     io.ReaderAt
	base  int64 // file offset of buf[0]
	buf   []byte
	r, w  int   // buf[r:w] is read but not yet returned
	limit int64 // stop at this offset; -1: at EOF
	max   int
	eof   bool
	long  bool
}

// NewLineReader reads f from off up to limit (-1: EOF); a line longer than
// max bytes ends the reading as an overlong fragment.
func NewLineReader(f io.ReaderAt, off, limit int64, max int) *LineReader {
	r := &LineReader{}
	r.Reset(f, off, limit, max)
	return r
}

// Reset starts the reader again at off, keeping its buffer.
func (s *LineReader) Reset(f io.ReaderAt, off, limit int64, max int) {
	if s.buf == nil {
		s.buf = make([]byte, 64<<10)
	}
	*s = LineReader{f: f, base: off, buf: s.buf, limit: limit, max: max}
}

// Next returns the next line (without its newline; valid until the next
// call) and its offset. complete is false for a final fragment with no
// newline (a torn tail, or an append in progress; Overlong says whether it
// is instead a line longer than any record). io.EOF at the end.
func (s *LineReader) Next() (line []byte, off int64, complete bool, err error) {
	for {
		if i := bytes.IndexByte(s.buf[s.r:s.w], '\n'); i >= 0 {
			line = s.buf[s.r : s.r+i]
			off = s.base + int64(s.r)
			s.r += i + 1
			return line, off, true, nil
		}
		if s.eof {
			if s.r < s.w {
				line, off = s.buf[s.r:s.w], s.base+int64(s.r)
				s.r = s.w
				return line, off, false, nil
			}
			return nil, 0, false, io.EOF
		}
		if err := s.fill(); err != nil {
			return nil, 0, false, err
		}
	}
}

// Offset is the file offset just past the last line returned.
func (s *LineReader) Offset() int64 { return s.base + int64(s.r) }

// Overlong reports whether reading stopped at a line longer than max.
func (s *LineReader) Overlong() bool { return s.long }

func (s *LineReader) fill() error {
	if s.r > 0 {
		n := copy(s.buf, s.buf[s.r:s.w])
		s.base += int64(s.r)
		s.r, s.w = 0, n
	}
	if s.w == len(s.buf) {
		if len(s.buf) > s.max {
			// A line longer than any record: hand it out as a fragment so
			// the caller reports it where it starts.
			s.eof, s.long = true, true
			return nil
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.w])
		s.buf = nb
	}
	want := len(s.buf) - s.w
	at := s.base + int64(s.w)
	if s.limit >= 0 {
		if left := s.limit - at; left < int64(want) {
			want = int(max(left, 0))
		}
		if want == 0 {
			s.eof = true
			return nil
		}
	}
	n, err := s.f.ReadAt(s.buf[s.w:s.w+want], at)
	s.w += n
	if errors.Is(err, io.EOF) || n == 0 {
		s.eof = true
		return nil
	}
	return err
}

// Group lets concurrent appenders share one commit (group commit): each
// caller hands its request to Do; the first to arrive while no commit runs
// becomes the leader and commits every request queued by then in one call
// (typically one write and one sync), then hands the lead to the next
// waiter. A caller returns only after the commit that covered its request.
type Group[T any] struct {
	mu      sync.Mutex
	pending []*groupReq[T]
	spare   []*groupReq[T] // the last batch's queue, emptied: the next pending
	leading bool
	commits atomic.Uint64
	batch   []T // the leader's, reused: commit must not keep it
	// reqs are spent requests, reused: a commit costs no allocation for
	// its callers' places in the queue.
	reqs sync.Pool
}

type groupReq[T any] struct {
	r T
	// wake gets one signal when the request is done, or when its caller
	// is made leader (buffered, so the signaller never waits; a channel
	// that is never closed can be reused).
	wake chan struct{}
	done bool // set before wake is signalled
}

// Do queues r and returns once a commit covering it has run. commit runs
// in exactly one goroutine at a time, with the requests in arrival order;
// it must not keep the batch slice (it is reused).
func (g *Group[T]) Do(r T, commit func(batch []T)) {
	q, _ := g.reqs.Get().(*groupReq[T])
	if q == nil {
		q = &groupReq[T]{wake: make(chan struct{}, 1)}
	}
	q.r, q.done = r, false
	g.mu.Lock()
	g.pending = append(g.pending, q)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		<-q.wake
		if q.done {
			g.put(q)
			return
		}
	}
	g.mu.Lock()
	queued := g.pending
	g.pending, g.spare = g.spare[:0], nil
	g.mu.Unlock()
	batch := g.batch[:0]
	for _, p := range queued {
		batch = append(batch, p.r)
	}
	commit(batch)
	clear(batch)
	g.batch = batch[:0]
	g.commits.Add(1)
	g.mu.Lock()
	for _, p := range queued {
		p.done = true
		if p != q {
			// Its caller puts it back once woken; nothing here
			// touches it after the signal.
			p.wake <- struct{}{}
		}
	}
	if len(g.pending) > 0 {
		g.pending[0].wake <- struct{}{} // not done: it leads next
	} else {
		g.leading = false
	}
	clear(queued)
	g.spare = queued[:0]
	g.mu.Unlock()
	g.put(q)
}

func (g *Group[T]) put(q *groupReq[T]) {
	var zero T
	q.r = zero
	g.reqs.Put(q)
}

// Commits is how many commits have run.
func (g *Group[T]) Commits() uint64 { return g.commits.Load() }
