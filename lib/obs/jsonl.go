package obs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// JSONL is a sink that appends envelopes to an owner-only regular file, one
// canonical record per line.
//
// Guarantees and how they are kept:
//
//   - Refusals before anything is written: the final path component must not
//     be a symlink (O_NOFOLLOW), the file must be regular (checked on the
//     open descriptor, opened non-blocking so a FIFO cannot hang us), owned
//     by the effective user and not accessible by group or others. A new
//     file is created 0600.
//   - One write(2) per record on an O_APPEND descriptor, so a record is never
//     interleaved with another writer's. A short write (a full disk) is cut
//     off again under the lock, so the file stays what it was and that
//     append fails as a whole; only if the cut fails is the sink poisoned:
//     every later append fails rather than writing after half a record. A
//     failed fsync poisons it too (after fsync fails the kernel may have
//     dropped the dirty pages; retrying would report success for lost data).
//   - Several processes may append to one file. Every append holds flock on
//     the file (it is never replaced by rename, so its inode is stable and
//     no separate lock file is needed), and under the lock first reads what
//     others appended since its last look, so the per-subject sequence the
//     Emitter allocates continues theirs. Readers (verify, tail) take no lock.
//   - Recovery on open reads only the last RecoverBytes of the file: it
//     truncates a torn last record (a writer died mid-write; the fix is made
//     under the lock and fsync'd), refuses a corrupt record or one of another
//     version, and learns the recent ids and each subject's last sequence.
//     The bound is a trade: a subject whose last event is older than the
//     window restarts at 1 (artobs verify reports it as out of order), and an
//     id older than the window is not recognised as a duplicate by an
//     appender (an older seq for its subject is still refused as stale).
//   - With Sync, each append returns after an fsync covering its record;
//     concurrent appenders share one fsync (group commit).
type JSONL struct {
	path     string
	window   int64
	lockWait time.Duration

	mu       sync.Mutex // held from begin to end
	f        *os.File
	w        io.Writer // f, or a test's short writer
	size     int64     // the file size after our last append or catch-up
	last     map[string]uint64
	ids      *idSet
	poisoned error
	closed   bool
	order    string
	rec      Recovery
	buf      []byte
	readBuf  []byte

	sync bool
	gc   groupCommit
}

// Recovery says what opening (and catching up with) a JSONL file found.
type Recovery struct {
	Records    int   // records read from the tail window and catch-ups
	TornBytes  int64 // bytes of torn last records truncated
	Duplicates int   // ids seen twice within what was read
}

// JSONLOptions tune a JSONL sink.
type JSONLOptions struct {
	Sync         bool  // fsync each record before Append returns
	RecoverBytes int64 // tail window read on open (0: DefaultRecoverBytes)
	RememberIDs  int   // ids remembered for duplicate detection (0: DefaultRememberIDs)
	// LockWait bounds the wait for another process's flock (0:
	// DefaultLockWait); past it the append fails with ErrBusy.
	LockWait time.Duration
}

// DefaultLockWait is how long an append waits for the file lock.
const DefaultLockWait = 10 * time.Second

// DefaultRecoverBytes is the tail window: a few thousand typical events.
const DefaultRecoverBytes = 4 << 20

// minRecoverBytes keeps the window larger than any record.
const minRecoverBytes = 256 << 10

// OpenJSONL opens (creating 0600) and recovers the JSONL file at path.
func OpenJSONL(path string, o JSONLOptions) (*JSONL, error) {
	name := "jsonl:" + path
	if path == "" {
		return nil, &SinkError{Sink: name, Op: "open", Err: fmt.Errorf("empty path: %w", ErrSinkSpec)}
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK):
			err = ErrSymlink
		case errors.Is(err, unix.EISDIR):
			err = ErrNotRegular
		default:
			err = &os.PathError{Op: "open", Path: path, Err: err}
		}
		return nil, &SinkError{Sink: name, Op: "open", Err: err}
	}
	fail := func(e error) (*JSONL, error) {
		unix.Close(fd)
		return nil, &SinkError{Sink: name, Op: "open", Err: e}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	switch {
	case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
		return fail(ErrNotRegular)
	case int(st.Uid) != os.Geteuid():
		return fail(ErrOwner)
	case uint32(st.Mode)&0o077 != 0:
		return fail(fmt.Errorf("mode %#o: %w", uint32(st.Mode)&0o777, ErrPermissions))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fail(err)
	}
	window := o.RecoverBytes
	if window <= 0 {
		window = DefaultRecoverBytes
	}
	remember := o.RememberIDs
	if remember <= 0 {
		remember = DefaultRememberIDs
	}
	f := os.NewFile(uintptr(fd), path)
	j := &JSONL{
		path:   path,
		window: max(window, minRecoverBytes),
		f:      f,
		w:      f,
		last:   map[string]uint64{},
		ids:    newIDSet(remember),
		order:  strconv.FormatUint(uint64(st.Dev), 16) + ":" + strconv.FormatUint(uint64(st.Ino), 16),
		sync:   o.Sync,
	}
	j.lockWait = o.LockWait
	if j.lockWait <= 0 {
		j.lockWait = DefaultLockWait
	}
	j.gc.sync = f.Sync
	if err := j.begin(); err != nil {
		f.Close()
		return nil, err
	}
	j.end0()
	return j, nil
}

// Name implements Sink.
func (j *JSONL) Name() string { return "jsonl:" + j.path }

// Path is the file's path.
func (j *JSONL) Path() string { return j.path }

// Recovery reports what recovery has found so far.
func (j *JSONL) Recovery() Recovery {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rec
}

func (j *JSONL) lockOrder() string { return j.order }

func (j *JSONL) lastSeq(subject string) uint64 { return j.last[subject] } // under begin

// holds reports a remembered id; under begin.
func (j *JSONL) holds(id string) bool {
	d, ok := digestOf(id)
	return ok && j.ids.has(d)
}

func (j *JSONL) err(op string, err error) error {
	return &SinkError{Sink: j.Name(), Op: op, Err: err}
}

// begin locks the sink (in-process mutex, then flock) and catches up with
// the file: it must be followed by end.
func (j *JSONL) begin() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return j.err("append", ErrClosed)
	}
	if j.poisoned != nil { // leave the file alone: the next opener recovers it
		j.mu.Unlock()
		return j.err("append", j.poisoned)
	}
	if err := lockWithin(j.f, j.lockWait); err != nil {
		j.mu.Unlock()
		return j.err("lock", err)
	}
	if err := j.catchUp(); err != nil {
		j.end0()
		return err
	}
	return nil
}

// end releases the flock and the mutex.
func (j *JSONL) end() { j.end0() }

func (j *JSONL) end0() {
	_ = flock(j.f, unix.LOCK_UN)
	j.mu.Unlock()
}

// lockWithin takes the exclusive flock, waiting at most d: a writer holds
// it for one write, so a long wait means a stopped or stuck process, and
// the work being observed must not hang on it.
func lockWithin(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	pause := 20 * time.Microsecond
	for {
		err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the file lock was held by another process for %s: %w", d, ErrBusy)
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// catchUp reads what was appended since j.size (by other processes), or the
// tail window when that is too much or the file shrank.
func (j *JSONL) catchUp() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(j.f.Fd()), &st); err != nil {
		return j.err("stat", err)
	}
	size := st.Size
	if size == j.size {
		return nil
	}
	from, partial := j.size, false
	if size < j.size || size-j.size > j.window || j.size == 0 {
		from = max(0, size-j.window)
		partial = from > 0
	}
	return j.scan(from, size, partial)
}

// scan reads records in [from, size). partial: from may be mid-record, so
// the first line is skipped.
func (j *JSONL) scan(from, size int64, partial bool) error {
	n := int(size - from)
	if cap(j.readBuf) < n {
		j.readBuf = make([]byte, n)
	}
	data := j.readBuf[:n]
	if _, err := j.f.ReadAt(data, from); err != nil && err != io.EOF {
		return j.err("recover", err)
	}
	if n > 0 && data[n-1] != '\n' {
		nl := bytes.LastIndexByte(data, '\n')
		if nl < 0 && partial {
			return j.err("recover", fmt.Errorf("%w: no record boundary in the last %d bytes", ErrCorrupt, n))
		}
		keep := from + int64(nl+1)
		if err := j.f.Truncate(keep); err != nil {
			return j.err("truncate torn record", err)
		}
		if err := j.f.Sync(); err != nil {
			return j.err("truncate torn record", err)
		}
		j.rec.TornBytes += size - keep
		data = data[:nl+1]
		size = keep
	}
	off := from
	if partial {
		nl := bytes.IndexByte(data, '\n')
		data = data[nl+1:]
		off += int64(nl + 1)
	}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		line := data[:nl]
		if err := j.learn(line, off); err != nil {
			return err
		}
		data = data[nl+1:]
		off += int64(nl + 1)
	}
	j.size = size
	return nil
}

// cutBack removes the n bytes a failed write left at the end of the file
// (a full disk takes what fits in the last page), so that readers never see
// half a record and the file is what it was before the append. The caller
// holds the flock, and every writer appends under it, so the file ended at
// j.size when the write began. Only if the cut fails is the sink poisoned;
// the next opener then truncates the torn record.
func (j *JSONL) cutBack(n int, err error) error {
	t, ok := j.w.(interface{ Truncate(int64) error })
	if !ok {
		t = j.f
	}
	if terr := t.Truncate(j.size); terr != nil {
		j.poisoned = fmt.Errorf("%w: wrote %d of %d bytes: %v; and could not cut them off: %v", ErrPoisoned, n, len(j.buf), err, terr)
		return j.poisoned
	}
	return fmt.Errorf("wrote %d of %d bytes, then cut them off: %w", n, len(j.buf), err)
}

func (j *JSONL) learn(line []byte, off int64) error {
	if !bytes.HasPrefix(line, []byte(apiPrefix)) {
		if bytes.HasPrefix(line, []byte(`{"apiVersion":"`)) {
			return j.err("recover", fmt.Errorf("%w at byte %d", ErrVersion, off))
		}
		return j.err("recover", fmt.Errorf("%w at byte %d", ErrCorrupt, off))
	}
	id, subject, seq, ok := peek(line)
	if !ok {
		return j.err("recover", fmt.Errorf("%w at byte %d", ErrCorrupt, off))
	}
	if j.ids.has(id) {
		j.rec.Duplicates++
	}
	j.ids.add(id)
	if seq > j.last[subject] {
		j.last[subject] = seq
	}
	j.rec.Records++
	return nil
}

// appendBatch writes every new envelope of a batch with one write(2); the
// caller holds begin. A duplicate or stale envelope is skipped (reported
// per envelope); a failed write fails every envelope that was in it, and
// what a partial one wrote is cut off again (cutBack).
func (j *JSONL) appendBatch(_ context.Context, envs []*Envelope) ([]Outcome, []error, func() error) {
	outs, errs := make([]Outcome, len(envs)), make([]error, len(envs))
	failAll := func(err error) ([]Outcome, []error, func() error) {
		for k := range envs {
			if outs[k] != Duplicate && errs[k] == nil {
				outs[k], errs[k] = Failed, err
			}
		}
		return outs, errs, nil
	}
	if j.poisoned != nil {
		return failAll(j.err("append", j.poisoned))
	}
	if err := j.gc.failed(); err != nil {
		j.poisoned = fmt.Errorf("%w: %v", ErrPoisoned, err)
		return failAll(j.err("append", j.poisoned))
	}
	type pending struct {
		d       digest
		subject string
		seq     uint64
	}
	var fresh []pending
	lastOf := func(subject string) uint64 {
		seq := j.last[subject]
		for _, p := range fresh {
			if p.subject == subject {
				seq = max(seq, p.seq)
			}
		}
		return seq
	}
	j.buf = j.buf[:0]
	for k, env := range envs {
		d, ok := digestOf(env.id)
		if !ok {
			outs[k], errs[k] = Failed, j.err("append", fmt.Errorf("bad id %q", env.id))
			continue
		}
		dup := j.ids.has(d)
		for _, p := range fresh {
			dup = dup || p.d == d
		}
		if dup {
			outs[k] = Duplicate
			continue
		}
		if held := lastOf(env.subject); env.seq <= held {
			outs[k], errs[k] = Failed, j.err("append", fmt.Errorf("%s seq %d (holds %d): %w", env.subject, env.seq, held, ErrStale))
			continue
		}
		fresh = append(fresh, pending{d, env.subject, env.seq})
		outs[k] = Appended
		j.buf = env.AppendLine(j.buf)
	}
	if len(fresh) == 0 {
		return outs, errs, nil
	}
	n, err := j.w.Write(j.buf)
	if n != len(j.buf) || err != nil {
		if err == nil {
			err = io.ErrShortWrite
		}
		if n > 0 {
			err = j.cutBack(n, err)
		}
		return failAll(j.err("append", err))
	}
	j.size += int64(n)
	for _, p := range fresh {
		j.ids.add(p.d)
		j.last[p.subject] = max(j.last[p.subject], p.seq)
	}
	if !j.sync {
		return outs, errs, nil
	}
	gen := j.gc.wrote()
	return outs, errs, func() error {
		if err := j.gc.wait(gen); err != nil {
			return j.err("sync", fmt.Errorf("%w: %v", ErrPoisoned, err))
		}
		return nil
	}
}

// Append implements Sink: lock, catch up, write, unlock, then wait for the
// shared fsync when syncing.
func (j *JSONL) Append(ctx context.Context, env *Envelope) (Outcome, error) {
	if err := j.begin(); err != nil {
		return Failed, err
	}
	outs, errs, wait := j.appendBatch(ctx, []*Envelope{env})
	j.end()
	if errs[0] == nil && wait != nil {
		if err := wait(); err != nil {
			return Failed, err
		}
	}
	return outs[0], errs[0]
}

// Close implements Sink. It does not fsync: with Sync every record already
// is; without, the page cache holds the records (they survive our exit, not
// a power cut).
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return j.err("close", err)
	}
	return nil
}

// groupCommit lets concurrent appenders share fsyncs: the first waiter whose
// record is not yet durable runs one fsync covering every record written so
// far; the others wait for it. A failed fsync is sticky.
type groupCommit struct {
	mu      sync.Mutex
	cond    *sync.Cond
	written uint64
	synced  uint64
	syncing bool
	err     error
	sync    func() error
	syncs   uint64 // fsyncs run, for tests and benchmarks
}

func (g *groupCommit) wrote() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written++
	return g.written
}

func (g *groupCommit) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *groupCommit) wait(gen uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	for g.synced < gen && g.err == nil {
		if g.syncing {
			g.cond.Wait()
			continue
		}
		g.syncing = true
		target := g.written
		g.mu.Unlock()
		err := g.sync()
		g.mu.Lock()
		g.syncing = false
		g.syncs++
		if err != nil {
			g.err = err
		} else {
			g.synced = target
		}
		g.cond.Broadcast()
	}
	return g.err
}
