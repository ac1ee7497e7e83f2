// Package file is the queue's default backend: an append-only log of
// records in one local directory, fsync'd before anything is acknowledged,
// with flock for writers and worker leases.
//
// Layout of a queue directory (0700, files 0600):
//
//	events.log       the log: one record per line (see queue.AppendRecord)
//	snapshot.json    state through some seq, written atomically by compact
//	lock             flock(2) held by whoever appends or compacts
//	workers/ID.lock  flock(2) held by worker ID for its whole life
//
// The mechanics of the log file (the dedicated lock file, the bounded wait
// for it, reading from a byte offset, cutting a torn tail, the one write
// and the sync of an append, group commit) are fsx.Log's and fsx.Group's;
// this package adds what a record means: checksums, sequence, batches,
// conditions, snapshots and compaction.
//
// Writers (Open without ReadOnly) verify the whole segment once when they
// open it (every checksum, the sequence, every batch: nothing is appended
// to a corrupt log), take the lock for each commit (waiting at most
// Options.LockTimeout, then failing with the holder's pid and command),
// catch up on records other processes appended (from the offset where the
// last commit ended, never from the start), cut a torn tail (recording a
// truncated event), check each proposal's condition, write the commit with
// one write(2) and one fdatasync(2), and only then report success. The
// events of one multi-event Append are a batch (see walker in scan.go):
// readers apply it only once its commit record is read, and a writer cuts a
// batch a crash left without one, whole. Concurrent appenders in one
// process are batched by a leader that commits for all of them (group
// commit): the tasks of a worker running several at once share syncs. A
// write that fails is undone with ftruncate; a sync that fails leaves the
// page cache in doubt, so the backend refuses all further appends until it
// is reopened.
//
// Readers (ReadOnly) never create, lock, truncate or remove anything; a torn
// tail is simply not read. A reader keeps a cursor (segment, byte offset,
// sequence) and continues from it; the records this process appended
// itself are stepped over without being read again when the caller already
// has them. Compaction writes the snapshot first and then atomically
// replaces events.log with a new segment that holds the events after the
// snapshot and a compacted event; at every point in between, the snapshot
// plus the events.log on disk replay to the same state.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/queue"
)

// File names inside a queue directory.
const (
	LogName      = "events.log"
	SnapshotName = "snapshot.json"
	LockName     = "lock"
	WorkersDir   = "workers"
)

// Options configure a Backend.
type Options struct {
	// ReadOnly opens for inspection: nothing is ever written, created or
	// locked; a missing directory reads as an empty queue.
	ReadOnly bool
	// NoGroupCommit syncs once per Append call instead of batching
	// concurrent calls: the baseline group commit is measured against.
	NoGroupCommit bool
	// WatchInterval is how often Wait looks for appends by other processes
	// (appends in this process wake it at once). Default 100ms.
	WatchInterval time.Duration
	// LockTimeout bounds the wait for the append lock (default
	// DefaultLockTimeout, 30s); past it a write fails (exit 125) naming
	// the holder's pid and command.
	LockTimeout time.Duration

	// hook, in tests, runs at named points of a commit or compaction; an
	// error stops the operation there as a crash would.
	hook func(step string) error
}

// Backend is a queue directory. It implements queue.Backend.
//
// Three locks, each for one side: cmu for the writer (the current segment,
// its end and last sequence, the per-task index; held by the group-commit
// leader or a compaction), rmu for the read cursor, wmu for what Wait
// watches. The order, where two are held, is cmu before rmu.
type Backend struct {
	dir, logPath, lockPath, snapPath, workers string
	opts                                      Options

	cmu       sync.Mutex
	w         *fsx.Log // the current segment, writable; nil until needed
	wEnd      int64    // offset just past the last good record
	wSeq      uint64   // sequence of the last record (or the snapshot's)
	syncs     uint64   // syncs of segments closed before w
	broken    error    // a failed sync: refuse further appends
	buf       []byte
	ownEvs    []*queue.Event // writeLocked's, reused
	idx       index
	locker    *fsx.Locker // the append lock, DIR/lock
	holder    []byte      // what the lock file says while we hold it, up to "since"
	holderBuf []byte
	group     fsx.Group[*request]
	flat      []*request // the leader's flattened batch, reused
	// commitFn is commitCalls, bound once (a method value made per
	// append would be an allocation per append).
	commitFn func([]*request)

	rmu sync.Mutex
	rc  *cursor
	rst unix.Stat_t // Read's lstat of the path, reused
	// own are this process's commits that the cursor has not passed yet,
	// by start offset: Read steps over them when the caller already holds
	// their events.
	own map[int64]ownRun

	wmu    sync.Mutex
	notify chan struct{} // closed by every commit in this process
	// Wait's cache of the log's last sequence: segment, size, seq.
	tailSeg  os.FileInfo
	tailSize int64
	tailSeq  uint64
	wst      unix.Stat_t // lastSeq's lstat, reused

	// pin, for a view Pin made, is what it reads instead of the paths.
	pin *pinned
}

var (
	_ queue.Backend      = (*Backend)(nil)
	_ queue.EachAppender = (*Backend)(nil)
)

// Open opens the queue directory dir. A writable backend creates dir
// (0700), cuts a torn tail and records a truncated event for it, and removes
// temporary files left by a crashed compaction.
func Open(dir string, opts Options) (*Backend, error) {
	if opts.WatchInterval <= 0 {
		opts.WatchInterval = 100 * time.Millisecond
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	b := &Backend{
		dir:      dir,
		logPath:  filepath.Join(dir, LogName),
		lockPath: filepath.Join(dir, LockName),
		snapPath: filepath.Join(dir, SnapshotName),
		workers:  filepath.Join(dir, WorkersDir),
		opts:     opts,
		notify:   make(chan struct{}),
		own:      map[int64]ownRun{},
	}
	b.commitFn = b.commitCalls
	b.locker = fsx.NewLocker(b.lockPath, opts.LockTimeout)
	if opts.ReadOnly {
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			return nil, exitcode.Errorf(exitcode.Usage, "queue directory %s: not a directory", dir)
		}
		return b, nil
	}
	if err := fsx.MkdirState(dir); err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "queue directory %s: %w", dir, err)
	}
	if err := fsx.MkdirState(b.workers); err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "queue directory %s: %w", dir, err)
	}
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if err := b.lock(); err != nil {
		return nil, err
	}
	defer b.unlock()
	torn, err := b.prepareLocked()
	if err != nil {
		b.closeWriter()
		return nil, err
	}
	b.sweepTemps()
	if torn != nil {
		if err := b.writeLocked(nil, torn); err != nil {
			b.closeWriter()
			return nil, err
		}
	}
	return b, nil
}

// Dir is the queue directory.
func (b *Backend) Dir() string { return b.dir }

// ReadOnly implements queue.Backend.
func (b *Backend) ReadOnly() bool { return b.opts.ReadOnly }

// Syncs is how many fdatasyncs this backend has run on the log (its
// commits and torn-tail cuts): what group commit saves, for benchmarks.
func (b *Backend) Syncs() uint64 {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	n := b.syncs
	if b.w != nil {
		n += b.w.Syncs()
	}
	return n
}

// Close releases the backend's files. It does not wait for appends in
// flight; callers stop appending first.
func (b *Backend) Close() error {
	b.cmu.Lock()
	b.closeWriter()
	b.locker.Close()
	b.cmu.Unlock()
	b.rmu.Lock()
	if b.rc != nil && b.pin == nil {
		b.rc.log.Close()
	}
	b.rc = nil
	if b.pin != nil && b.pin.log != nil {
		b.pin.log.Close()
		b.pin.log = nil
	}
	b.rmu.Unlock()
	return nil
}

func (b *Backend) closeWriter() {
	if b.w != nil {
		b.syncs += b.w.Syncs()
		b.w.Close()
		b.w = nil
	}
}

func (b *Backend) hook(step string) error {
	if b.opts.hook != nil {
		return b.opts.hook(step)
	}
	return nil
}

// openSegment opens events.log as a Log (writable or not; create makes a
// missing one). The lock is the queue's, not the segment's: it outlives
// every segment a compaction replaces.
func (b *Backend) openSegment(readOnly, create bool) (*fsx.Log, error) {
	return fsx.OpenLog(b.logPath, fsx.LogOptions{ReadOnly: readOnly, Create: create, LockPath: b.lockPath, LockWait: b.opts.LockTimeout, MaxLine: maxRecord})
}

// walk is the one loop over records: it reads the units of a segment
// from off (prev is the sequence before it, 0 at a segment's start) up to
// limit (-1: the end) and calls fn with each whole unit, its start and
// end offsets (fn nil: the records are only checked, and a batch is not
// held whole); fn must not keep evs (the events themselves it may), and
// its error is returned as is (the walker's own are readErr's). It
// returns the offset and sequence after the last whole unit, and the torn
// tail that stopped it, if one did (not an error: what a crash mid-append
// or an append in progress leaves). Damage is a *queue.CorruptError.
func (b *Backend) walk(l *fsx.Log, off, limit int64, prev uint64, want func(seq, unit uint64) bool, fn func(evs []*queue.Event, start, end int64) error) (end int64, last uint64, torn *tornError, err error) {
	w := walker{rd: l.Lines(off, limit), path: b.logPath, want: want, prev: prev, checkOnly: fn == nil}
	end, last = off, prev
	for {
		evs, start, e, err := w.next()
		if err == io.EOF {
			return end, last, nil, nil
		}
		if te, ok := err.(*tornError); ok {
			return end, last, te, nil
		}
		if err != nil {
			return end, last, nil, b.readErr(err)
		}
		if fn != nil {
			if err := fn(evs, start, e); err != nil {
				return end, last, nil, err
			}
		}
		end, last = e, evs[len(evs)-1].Seq
	}
}

// ---- writing -------------------------------------------------------------

// prepareLocked makes w, wEnd and wSeq describe events.log as it is now and
// catches up on records appended by other processes. It cuts a torn tail
// (synced) and returns it, so the caller records a truncated event. Called
// with cmu and the flock held.
func (b *Backend) prepareLocked() (*queue.TornTail, error) {
	var st unix.Stat_t
	err := lstat(b.logPath, &st)
	if errors.Is(err, os.ErrNotExist) {
		b.closeWriter()
		b.idx = index{}
		l, err := b.openSegment(false, true)
		if err != nil {
			return nil, b.ioErr("create", err)
		}
		if err := fsx.SyncDir(b.dir); err != nil {
			l.Close()
			return nil, b.ioErr("create", err)
		}
		seq, err := b.snapshotSeq()
		if err != nil {
			l.Close()
			return nil, err
		}
		b.w, b.wEnd, b.wSeq = l, 0, seq
		return nil, nil
	}
	if err != nil {
		return nil, b.ioErr("stat", err)
	}
	if b.w == nil || !sameFile(b.w.Info(), &st) {
		// A new segment (first use, or another process compacted): a
		// writer reads the whole of it once, every record's checksum, the
		// sequence and every batch, so that nothing is ever appended to a
		// corrupt log and a torn tail is told from damage. The index is
		// rebuilt from the snapshot when a condition next needs it.
		b.closeWriter()
		b.idx = index{}
		l, err := b.openSegment(false, false)
		if err != nil {
			return nil, b.ioErr("open", err)
		}
		b.w, b.wEnd, b.wSeq = l, 0, 0
		size, err := l.Size()
		if err != nil {
			return nil, b.ioErr("stat", err)
		}
		end, last, te, err := b.walk(l, 0, size, 0, cheap, nil)
		if err != nil {
			return nil, err
		}
		b.wEnd = end
		if last != 0 {
			b.wSeq = last
		} else if b.wSeq, err = b.snapshotSeq(); err != nil {
			return nil, err
		}
		if te != nil {
			torn := &queue.TornTail{Offset: te.Offset, Bytes: size - te.Offset}
			return torn, b.cut(torn)
		}
		return nil, nil
	}
	// The path's lstat is the segment's (same file): its size is the
	// segment's, no fstat needed.
	size := st.Size
	switch {
	case size == b.wEnd:
		return nil, nil
	case size < b.wEnd:
		return nil, &queue.CorruptError{Path: b.logPath, Offset: size, Why: fmt.Sprintf("the log shrank from %d to %d bytes behind this writer's back", b.wEnd, size)}
	}
	// Records appended by another process since our last commit, from
	// where it ended; decoded only if the index is kept.
	want := cheap
	if b.idx.ok {
		want = nil
	}
	end, last, te, err := b.walk(b.w, b.wEnd, size, b.wSeq, want, func(evs []*queue.Event, _, _ int64) error {
		for _, ev := range evs {
			b.idx.apply(ev)
		}
		return nil
	})
	b.wEnd, b.wSeq = end, last
	if err != nil {
		return nil, err
	}
	if te != nil {
		// We hold the lock, so no append is in progress: what is left is
		// a crashed writer's. A batch without its commit is cut whole.
		torn := &queue.TornTail{Offset: te.Offset, Bytes: size - te.Offset}
		return torn, b.cut(torn)
	}
	return nil, nil
}

// lstat is unix.Lstat with os's error (no allocation on the hot path).
func lstat(path string, st *unix.Stat_t) error {
	for {
		err := unix.Lstat(path, st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "lstat", Path: path, Err: err}
		}
		return nil
	}
}

// sameFile reports whether fi (from os) is the file st describes.
func sameFile(fi os.FileInfo, st *unix.Stat_t) bool {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == uint64(st.Dev) && uint64(sys.Ino) == uint64(st.Ino)
}

// cut trims a torn tail (synced), so that a record appended next is not
// glued to a fragment.
func (b *Backend) cut(t *queue.TornTail) error {
	if err := b.w.Trim(t.Offset); err != nil {
		if errors.Is(err, fsx.ErrLogBroken) {
			b.broken = b.ioErr("sync", err)
			return b.broken
		}
		return b.ioErr("truncate torn tail", err)
	}
	b.wEnd = t.Offset
	return nil
}

// request is one Append call, or the first of the calls of one
// AppendEach (more holds the others: they are committed together).
type request struct {
	ps   []queue.Proposal
	evs  []*queue.Event
	err  error
	more []*request
}

// Append implements queue.Backend. Once a request is queued it is written or
// fails as a whole; ctx is only checked before.
func (b *Backend) Append(ctx context.Context, ps []queue.Proposal) ([]*queue.Event, error) {
	if b.opts.ReadOnly {
		return nil, queue.ErrReadOnly
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if err := validate(ps); err != nil {
		return nil, err
	}
	r := &request{ps: ps}
	b.submit(r)
	return r.evs, r.err
}

// validate refuses proposals without an event or with a sequence: the
// backend assigns sequences.
func validate(ps []queue.Proposal) error {
	for i := range ps {
		if ps[i].Event == nil || ps[i].Event.Seq != 0 {
			return exitcode.Errorf(exitcode.Internal, "append: proposal %d has no event or a sequence already", i)
		}
	}
	return nil
}

// AppendEach implements queue.EachAppender: each call is checked and
// written as one Append would be, and all of them go into one commit (one
// write, one sync), shared with whatever else is committing then.
func (b *Backend) AppendEach(ctx context.Context, calls [][]queue.Proposal) ([][]*queue.Event, []error) {
	evss, errs := make([][]*queue.Event, len(calls)), make([]error, len(calls))
	fail := func(err error) ([][]*queue.Event, []error) {
		for i := range errs {
			errs[i] = err
		}
		return evss, errs
	}
	if b.opts.ReadOnly {
		return fail(queue.ErrReadOnly)
	}
	if err := context.Cause(ctx); err != nil {
		return fail(err)
	}
	rs := make([]*request, 0, len(calls))
	for _, ps := range calls {
		if err := validate(ps); err != nil {
			return fail(err)
		}
		rs = append(rs, &request{ps: ps})
	}
	rs[0].more = rs[1:]
	b.submit(rs[0])
	for i, r := range rs {
		evss[i], errs[i] = r.evs, r.err
	}
	return evss, errs
}

// submit commits r (and r.more): at once (NoGroupCommit), or with the
// requests of every other caller waiting meanwhile (group commit).
func (b *Backend) submit(r *request) {
	if b.opts.NoGroupCommit {
		b.commit(append([]*request{r}, r.more...))
		return
	}
	b.group.Do(r, b.commitFn)
}

// commitCalls commits the requests of a group-commit batch, the calls of
// an AppendEach spread out in order. Only the group's leader runs it.
func (b *Backend) commitCalls(calls []*request) {
	batch := b.flat[:0]
	for _, r := range calls {
		batch = append(batch, r)
		batch = append(batch, r.more...)
	}
	b.commit(batch)
	clear(batch)
	b.flat = batch[:0]
}

// commit writes the requests that pass their conditions with one write and
// one sync, under cmu and the flock.
func (b *Backend) commit(batch []*request) {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil {
				r.err, r.evs = err, nil
				disown(r.ps)
			}
		}
	}
	if b.broken != nil {
		fail(b.broken)
		return
	}
	if err := b.lock(); err != nil {
		fail(err)
		return
	}
	defer b.unlock()
	torn, err := b.prepareLocked()
	if err != nil {
		fail(err)
		return
	}
	if err := b.writeLocked(batch, torn); err != nil {
		fail(err)
	}
}

// writeLocked checks conditions, encodes, writes and syncs. A torn tail just
// cut is recorded first. Called with cmu and the flock held.
func (b *Backend) writeLocked(batch []*request, torn *queue.TornTail) error {
	now := time.Now().UTC()
	buf := b.buf[:0]
	seq := b.wSeq
	own := b.ownEvs[:0] // events written, in order, for the index
	// A large commit (a 100,000-task enqueue --batch) goes out in pieces
	// of writePiece bytes rather than one buffer of the whole commit; it
	// is still synced once, and a crash between pieces leaves a batch
	// without its commit, which replay never applies and the next writer
	// cuts, as it would after a crash inside one large write.
	var written int64 // bytes of this commit already written
	var werr error    // the first failed write: nothing more is written
	flush := func() {
		if werr != nil || len(buf) == 0 {
			return
		}
		if written == 0 {
			if werr = b.hook("write"); werr != nil {
				return
			}
		}
		if k, ok := queue.TornWrite(); ok && k < written+int64(len(buf)) {
			b.w.File().Write(buf[:k-written])
			queue.Crash()
		}
		if err := b.w.Append(buf, b.wEnd+written); err != nil {
			werr = b.ioErr("append", err)
			if errors.Is(err, fsx.ErrLogBroken) {
				b.broken = werr
			} else if written > 0 {
				// Undo the earlier pieces too: the log ends at its last
				// good record.
				if terr := b.w.Truncate(b.wEnd); terr != nil {
					b.broken = werr
				}
			}
			return
		}
		written += int64(len(buf))
		buf = buf[:0]
	}
	needIndex, n := false, 0
	for _, r := range batch {
		n += len(r.ps)
		for _, p := range r.ps {
			needIndex = needIndex || !p.Any
		}
	}
	// The events written are kept for the index only when there is one
	// (a batch of generated ids into a queue no condition has needed yet
	// keeps none); a large commit gets its buffer whole at once rather
	// than by a dozen growths.
	keepOwn := needIndex || b.idx.ok
	if keepOwn && cap(own) < n+1 {
		own = make([]*queue.Event, 0, n+1)
	}
	if n > 1024 && cap(buf) < writePiece+64<<10 {
		buf = make([]byte, 0, writePiece+64<<10)
	}
	add := func(ev *queue.Event) {
		seq++
		ev.Seq = seq
		if ev.Time.IsZero() {
			ev.Time = now
		}
		buf = queue.AppendRecord(buf, ev)
		buf = append(buf, '\n')
		if keepOwn {
			own = append(own, ev)
		}
		if len(buf) >= writePiece {
			flush()
		}
	}
	if torn != nil {
		add(&queue.Event{Type: queue.EventTruncated, Offset: torn.Offset, Bytes: torn.Bytes, Reason: "torn tail cut by a writer opening the log"})
	}
	if needIndex {
		if err := b.ensureIndex(); err != nil {
			return err
		}
	}
	var group map[string]uint64 // a task's latest seq within this commit
	if len(batch) > 1 {
		group = map[string]uint64{}
	}
	var firsts firstOf
	for _, r := range batch {
		firsts.reset(r.ps)
		for i, p := range r.ps {
			if p.Any || !firsts.first(r.ps, i) {
				continue
			}
			task := p.Event.Task
			have, ok := group[task]
			if !ok {
				have = b.idx.last[task]
			}
			if have != p.Expect {
				r.err = &queue.StaleError{Task: task, Expect: p.Expect, Have: have}
				break
			}
		}
		if r.err != nil {
			continue
		}
		r.evs = make([]*queue.Event, len(r.ps))
		var evs []queue.Event // the copies of the events not handed over
		first := seq + 1
		for i, p := range r.ps {
			ev := p.Event
			if !p.Owned {
				if evs == nil {
					evs = make([]queue.Event, len(r.ps)-i)
				}
				ev = &evs[0]
				evs = evs[1:]
				*ev = *p.Event
			}
			// Several events of one call are one batch: each names the
			// first, the last commits it (see walker).
			ev.Batch, ev.Commit = 0, false
			if len(r.ps) > 1 {
				ev.Batch, ev.Commit = first, i == len(r.ps)-1
			}
			add(ev)
			r.evs[i] = ev
			if group != nil && ev.Task != "" {
				group[ev.Task] = ev.Seq
			}
		}
	}
	flush()
	b.buf = buf[:0]
	if werr != nil {
		return werr
	}
	if written == 0 {
		return nil
	}
	if err := b.hook("sync"); err != nil {
		return err
	}
	if err := b.w.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages
		// and cleared the error: nothing written since the last good sync
		// can be trusted, so stop here.
		b.broken = b.ioErr("sync", err)
		b.w.Truncate(b.wEnd)
		return b.broken
	}
	start := b.wEnd
	b.wEnd += written
	b.wSeq = seq
	if b.idx.ok {
		for _, ev := range own {
			b.idx.apply(ev)
		}
	}
	clear(own)
	b.ownEvs = own[:0]
	b.noteOwn(start, b.wEnd, seq)
	b.wakeAt(b.w.Info(), b.wEnd, seq)
	return nil
}

// disown undoes what a failed commit did to the events handed over
// (queue.Proposal.Owned): Seq is zero again, so they may be proposed again.
func disown(ps []queue.Proposal) {
	for _, p := range ps {
		if p.Owned && p.Event != nil {
			p.Event.Seq, p.Event.Batch, p.Event.Commit = 0, 0, false
		}
	}
}

// writePiece is the most a commit holds encoded before writing it out.
const writePiece = 1 << 20

// firstOf says whether ps[i] is the first conditional proposal in ps for
// its task: within one call only that one is checked (later ones follow
// it). A call with few conditional proposals is searched; one with many
// (an enqueue --batch of 100,000 with ids) is mapped once, so the check
// stays linear. A batch of generated ids has none and maps nothing.
type firstOf struct {
	seen map[string]int
}

func (f *firstOf) reset(ps []queue.Proposal) {
	f.seen = nil
	n := 0
	for i := range ps {
		if !ps[i].Any {
			n++
		}
	}
	if n <= 16 {
		return
	}
	f.seen = make(map[string]int, n)
	for i := len(ps) - 1; i >= 0; i-- {
		if !ps[i].Any {
			f.seen[ps[i].Event.Task] = i
		}
	}
}

func (f *firstOf) first(ps []queue.Proposal, i int) bool {
	if f.seen != nil {
		return f.seen[ps[i].Event.Task] == i
	}
	for j := 0; j < i; j++ {
		if !ps[j].Any && ps[j].Event.Task == ps[i].Event.Task {
			return false
		}
	}
	return true
}

func (b *Backend) wake() {
	b.wmu.Lock()
	close(b.notify)
	b.notify = make(chan struct{})
	b.wmu.Unlock()
}

// wakeAt is wake after a commit that left segment seg at size bytes
// through seq: Wait's tail cache learns it without reading the tail back.
func (b *Backend) wakeAt(seg os.FileInfo, size int64, seq uint64) {
	b.wmu.Lock()
	b.tailSeg, b.tailSize, b.tailSeq = seg, size, seq
	close(b.notify)
	b.notify = make(chan struct{})
	b.wmu.Unlock()
}

func (b *Backend) ioErr(op string, err error) error {
	return exitcode.Errorf(exitcode.Internal, "%s %s: %w", op, b.logPath, unwrapPath(err))
}

// unwrapPath drops the *PathError wrapper whose message repeats the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (b *Backend) readErr(err error) error {
	if queue.IsCorrupt(err) {
		return err
	}
	return b.ioErr("read", err)
}

// ---- the index of each task's latest sequence ----------------------------

// index maps each task to the sequence of its latest event, through some
// sequence: what Append's conditions are checked against. It belongs to
// the writer (cmu): it is built once, when a conditional append first needs
// it, from the snapshot and the segment, and from then on fed by the
// writer alone, with its own commits and the records it catches up on.
type index struct {
	ok      bool
	through uint64
	last    map[string]uint64
}

func (x *index) apply(ev *queue.Event) {
	if !x.ok || ev.Seq != x.through+1 {
		return
	}
	if ev.Task != "" {
		x.last[ev.Task] = ev.Seq
	}
	x.through = ev.Seq
}

// ensureIndex brings the index up to wSeq, from the snapshot and the log.
// Called with cmu and the flock held.
func (b *Backend) ensureIndex() error {
	if b.idx.ok && b.idx.through == b.wSeq {
		return nil
	}
	snap, err := b.loadSnapshot()
	if err != nil {
		return err
	}
	b.idx = index{ok: true, last: map[string]uint64{}}
	if snap != nil {
		b.idx.last = make(map[string]uint64, len(snap.Tasks))
		for i := range snap.Tasks {
			b.idx.last[snap.Tasks[i].ID] = snap.Tasks[i].LastSeq
		}
		b.idx.through = snap.Seq
	}
	_, _, _, err = b.walk(b.w, 0, b.wEnd, 0, func(seq, _ uint64) bool { return seq > b.idx.through }, func(evs []*queue.Event, _, _ int64) error {
		for _, ev := range evs {
			b.idx.apply(ev)
		}
		return nil
	})
	if err != nil {
		b.idx = index{}
		return err
	}
	if b.idx.through != b.wSeq {
		through := b.idx.through
		b.idx = index{}
		return &queue.CorruptError{Path: b.logPath, Offset: -1, Why: fmt.Sprintf("the log and the snapshot do not meet (index at %d, log at %d)", through, b.wSeq)}
	}
	return nil
}

// ---- snapshots and compaction --------------------------------------------

// Snapshot implements queue.Backend.
func (b *Backend) Snapshot(ctx context.Context) (*queue.Snapshot, error) {
	return b.loadSnapshot()
}

func (b *Backend) loadSnapshot() (*queue.Snapshot, error) {
	var r io.Reader
	if b.pin != nil {
		if b.pin.snap == nil {
			return nil, nil
		}
		r = bytes.NewReader(b.pin.snap)
	} else {
		f, err := os.Open(b.snapPath)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "read %s: %w", b.snapPath, unwrapPath(err))
		}
		defer f.Close()
		r = f
	}
	snap, err := queue.ReadSnapshot(r)
	if err != nil {
		return nil, &queue.CorruptError{Path: b.snapPath, Offset: -1, Why: err.Error(), Err: err}
	}
	return snap, nil
}

// snapshotSeq reads the sequence from the snapshot's header only.
func (b *Backend) snapshotSeq() (uint64, error) {
	if b.pin != nil {
		if b.pin.snap == nil {
			return 0, nil
		}
		seq, ok := queue.SnapshotSeq(b.pin.snap[:min(len(b.pin.snap), 4096)])
		if !ok {
			return 0, &queue.CorruptError{Path: b.snapPath, Offset: 0, Why: "unreadable header"}
		}
		return seq, nil
	}
	f, err := os.Open(b.snapPath)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, exitcode.Errorf(exitcode.Internal, "read %s: %w", b.snapPath, unwrapPath(err))
	}
	defer f.Close()
	var head [4096]byte
	n, _ := io.ReadFull(f, head[:])
	seq, ok := queue.SnapshotSeq(head[:n])
	if !ok {
		return 0, &queue.CorruptError{Path: b.snapPath, Offset: 0, Why: "unreadable header"}
	}
	return seq, nil
}

// Compact implements queue.Backend. Order of the steps, each durable before
// the next: (1) the snapshot replaces snapshot.json atomically; (2) a new
// segment holding the events after the snapshot plus a compacted event
// replaces events.log atomically, which is also what removes the old
// segment. A crash before (1) changes nothing; between (1) and (2) the old
// log still holds every event after the snapshot, and replay skips those
// the snapshot covers; after (2) the new segment starts right after it.
func (b *Backend) Compact(ctx context.Context, snap *queue.Snapshot) error {
	if b.opts.ReadOnly {
		return queue.ErrReadOnly
	}
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if b.broken != nil {
		return b.broken
	}
	if err := b.lock(); err != nil {
		return err
	}
	defer b.unlock()
	torn, err := b.prepareLocked()
	if err != nil {
		return err
	}
	if torn != nil {
		if err := b.writeLocked(nil, torn); err != nil {
			return err
		}
	}
	cur, err := b.snapshotSeq()
	if err != nil {
		return err
	}
	if snap.Seq > b.wSeq {
		return exitcode.Errorf(exitcode.Internal, "compact: snapshot at %d is ahead of the log at %d", snap.Seq, b.wSeq)
	}
	if snap.Seq < cur {
		return fmt.Errorf("compact: a newer snapshot (%d) exists: %w", cur, queue.ErrStale)
	}
	// The events after the snapshot, copied into the new segment.
	var keep []byte
	first := uint64(0)
	_, _, _, err = b.walk(b.w, 0, b.wEnd, 0, func(seq, _ uint64) bool { return seq > snap.Seq }, func(evs []*queue.Event, _, _ int64) error {
		if first == 0 {
			first = evs[0].Seq
		}
		for _, ev := range evs {
			if ev.Seq > snap.Seq {
				keep = queue.AppendRecord(keep, ev)
				keep = append(keep, '\n')
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if first != 0 && first > snap.Seq+1 {
		return fmt.Errorf("compact: the log starts at %d, after the snapshot at %d: %w", first, snap.Seq, queue.ErrStale)
	}
	if err := b.hook("snapshot"); err != nil {
		return err
	}
	if err := fsx.WriteFile(b.snapPath, queue.EncodeSnapshot(snap), fsx.FileMode); err != nil {
		return exitcode.Errorf(exitcode.Internal, "compact: %w", err)
	}
	if err := b.hook("segment"); err != nil {
		return err
	}
	ev := &queue.Event{Seq: b.wSeq + 1, Time: time.Now().UTC(), Type: queue.EventCompacted, Through: snap.Seq}
	seg := queue.AppendRecord(keep, ev)
	seg = append(seg, '\n')
	if err := fsx.WriteFile(b.logPath, seg, fsx.FileMode); err != nil {
		return exitcode.Errorf(exitcode.Internal, "compact: %w", err)
	}
	if err := b.hook("switched"); err != nil {
		return err
	}
	// The index stays valid across our own compaction: only the
	// compacted event is new.
	idx := b.idx
	b.closeWriter()
	if _, err := b.prepareLocked(); err != nil {
		return err
	}
	if idx.ok && idx.through+1 == ev.Seq && b.wSeq == ev.Seq {
		b.idx = idx
		b.idx.apply(ev)
	}
	b.wake()
	return nil
}

// sweepTemps removes temporary files a crashed compaction left behind
// (fsx.WriteFile's "NAME<digits>"). Called with the flock held, so no
// compaction is writing them now.
func (b *Backend) sweepTemps() {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if isTemp(e.Name()) {
			os.Remove(filepath.Join(b.dir, e.Name()))
		}
	}
}

func isTemp(name string) bool {
	for _, base := range []string{LogName, SnapshotName} {
		if rest, ok := strings.CutPrefix(name, base); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// ---- reading -------------------------------------------------------------

// cursor remembers where the last Read stopped so the next one continues
// there instead of rescanning.
type cursor struct {
	log *fsx.Log
	off int64  // offset just past the last good record read
	seq uint64 // its sequence; 0 before the first record
}

// ownRun is one commit of this process: the bytes [start, end) of the
// segment it was written to, through sequence seq.
type ownRun struct {
	seg os.FileInfo
	end int64
	to  uint64
}

// maxOwn bounds the remembered commits a reader has not passed (a process
// that appends and never reads forgets the oldest; it reads them then).
const maxOwn = 256

// noteOwn remembers a commit so that Read can step over it for a caller
// that already holds its events. Called with cmu held.
func (b *Backend) noteOwn(start, end int64, to uint64) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if len(b.own) >= maxOwn {
		clear(b.own)
	}
	b.own[start] = ownRun{seg: b.w.Info(), end: end, to: to}
}

// Read implements queue.Backend.
func (b *Backend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if b.pin != nil {
		return b.readPinned(ctx, after, fn)
	}
	c := b.rc
	if c != nil && after < c.seq {
		c.log.Close()
		c, b.rc = nil, nil
	}
	for {
		if c == nil {
			l, err := b.openSegment(true, false)
			if errors.Is(err, os.ErrNotExist) {
				return b.noSegment(after)
			}
			if err != nil {
				return b.ioErr("open", err)
			}
			c = &cursor{log: l}
			b.rc = c
			if err := b.readFrom(ctx, c, after, true, -1, fn); err != nil {
				return err
			}
		}
		// A compaction renames a new segment over events.log; the old one
		// is frozen from then on. While the path is still the cursor's
		// segment, read it up to the size the path shows (nothing at all
		// when the cursor is there already: a catch-up that finds nothing
		// new costs this one lstat); once replaced, finish the old one,
		// then continue in the new one.
		if err := lstat(b.logPath, &b.rst); err != nil || sameFile(c.log.Info(), &b.rst) {
			size := int64(-1)
			if err == nil {
				size = b.rst.Size
			}
			return b.readFrom(ctx, c, after, false, size, fn)
		}
		if err := b.readFrom(ctx, c, after, false, -1, fn); err != nil {
			return err
		}
		l, err := b.openSegment(true, false)
		if err != nil {
			return nil // replaced again meanwhile: the next Read sees it
		}
		c.log.Close()
		nc := &cursor{log: l}
		b.rc = nc
		after = max(after, c.seq)
		if err := b.readFrom(ctx, nc, after, true, -1, fn); err != nil {
			return err
		}
		c = nc
	}
}

// noSegment is Read where there is no events.log: nothing to read after
// the snapshot, and what is before it compacted away.
func (b *Backend) noSegment(after uint64) error {
	base, err := b.snapshotSeq()
	if err != nil {
		return err
	}
	if after < base {
		return &queue.CompactedError{First: base + 1}
	}
	return nil
}

// readPinned is Read of a pinned view: its segment up to its size, and
// nothing after. Called with rmu held.
func (b *Backend) readPinned(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	if b.pin.log == nil {
		return b.noSegment(after)
	}
	c, fresh := b.rc, false
	if c == nil || after < c.seq {
		c, fresh = &cursor{log: b.pin.log}, true
		b.rc = c
	}
	return b.readFrom(ctx, c, after, fresh, b.pin.size, fn)
}

// readFrom delivers the records of c's segment after seq `after`, from
// c.off on, a whole unit at a time: a batch only once its commit is read.
// fresh means c starts at the segment's beginning, where the first record
// tells whether earlier events were compacted away. Records the caller
// already has are only checked (checksum, sequence), not decoded; this
// process's own commits that the caller already has are not read at all.
// size, when not -1, is the segment's size as just seen: nothing past the
// cursor then means nothing to read (no read(2) to find the end). Called
// with rmu held.
func (b *Backend) readFrom(ctx context.Context, c *cursor, after uint64, fresh bool, size int64, fn func(*queue.Event) error) error {
	first := fresh || c.seq == 0
	prev := c.seq
	if first {
		prev = 0
	}
	for !first {
		run, ok := b.own[c.off]
		if !ok || run.to > after || !os.SameFile(run.seg, c.log.Info()) {
			break
		}
		delete(b.own, c.off)
		c.off, c.seq, prev = run.end, run.to, run.to
	}
	if !first && size >= 0 && c.off >= size {
		b.forgetOwnBefore(c.off)
		return nil
	}
	// Up to the size seen, when one was: past it is what was appended
	// since, for the next Read (and no read(2) just to find the end).
	_, _, _, err := b.walk(c.log, c.off, size, prev, func(seq, unit uint64) bool { return seq > after }, func(evs []*queue.Event, _, end int64) error {
		if first {
			first = false
			if s := evs[0].Seq; s > after+1 {
				return &queue.CompactedError{First: s}
			}
		}
		c.off, c.seq = end, evs[len(evs)-1].Seq
		for _, ev := range evs {
			if ev.Seq <= after {
				continue
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
		return context.Cause(ctx)
	})
	b.forgetOwnBefore(c.off)
	// Stopped at the end, or before a torn last line (or an append in
	// progress), or by fn.
	return err
}

// forgetOwnBefore drops the remembered commits the cursor has passed.
// Called with rmu held.
func (b *Backend) forgetOwnBefore(off int64) {
	for o := range b.own {
		if o < off {
			delete(b.own, o)
		}
	}
}

// Wait implements queue.Backend.
func (b *Backend) Wait(ctx context.Context, after uint64) error {
	for {
		b.wmu.Lock()
		ch := b.notify
		b.wmu.Unlock()
		seq, err := b.lastSeq()
		if err != nil {
			return err
		}
		if seq > after {
			return nil
		}
		t := time.NewTimer(b.opts.WatchInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-ch:
			t.Stop()
		case <-t.C:
		}
	}
}

// lastSeq is the sequence of the last good record on disk, from the tail of
// the file, cached while the file's identity and size stay the same.
func (b *Backend) lastSeq() (uint64, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	st := &b.wst
	err := lstat(b.logPath, st)
	if errors.Is(err, os.ErrNotExist) {
		return b.snapshotSeq()
	}
	if err != nil {
		return 0, b.ioErr("stat", err)
	}
	if b.tailSeg != nil && sameFile(b.tailSeg, st) && st.Size == b.tailSize {
		return b.tailSeq, nil
	}
	f, err := os.Open(b.logPath)
	if err != nil {
		return 0, b.ioErr("open", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, b.ioErr("stat", err)
	}
	seq, ok, err := tailSeq(f, b.logPath, info.Size())
	if err != nil {
		return 0, b.readErr(err)
	}
	if !ok {
		if seq, err = b.snapshotSeq(); err != nil {
			return 0, err
		}
	}
	b.tailSeg, b.tailSize, b.tailSeq = info, info.Size(), seq
	return seq, nil
}

// ---- leases ----------------------------------------------------------------

type lease struct {
	lk   *fsx.Lock
	path string
}

func (l *lease) Lost() <-chan struct{} { return nil }

// Held implements queue.Lease: an flock is held until Release or death.
func (l *lease) Held() bool { return true }

// Release removes the lease file while still holding it (so no checker can
// see an unlocked file that a live worker owns) and then unlocks.
func (l *lease) Release() error {
	os.Remove(l.path)
	return l.lk.Unlock()
}

func (b *Backend) leasePath(worker string) (string, error) {
	if err := queue.ValidName("worker", worker); err != nil {
		return "", err
	}
	return filepath.Join(b.workers, worker+".lock"), nil
}

// AcquireLease implements queue.Backend: an flock on workers/ID.lock held
// until Release or death. ttl does not apply: the kernel drops the lock the
// moment the process dies, so recovery never waits for a timer.
func (b *Backend) AcquireLease(ctx context.Context, worker string, ttl time.Duration) (queue.Lease, error) {
	if b.opts.ReadOnly {
		return nil, queue.ErrReadOnly
	}
	path, err := b.leasePath(worker)
	if err != nil {
		return nil, err
	}
	// Alive() in another process takes the lock for an instant to test it;
	// a few quick retries ride over that.
	for i := 0; ; i++ {
		lk, err := fsx.TryLock(path)
		if err == nil {
			return &lease{lk: lk, path: path}, nil
		}
		if !errors.Is(err, fsx.ErrLocked) {
			return nil, exitcode.Errorf(exitcode.Internal, "worker lease: %w", err)
		}
		if i == 50 {
			return nil, exitcode.Errorf(exitcode.Conflict, "worker %s: another live worker holds this id", worker)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Alive implements queue.Backend: whether some process holds the worker's
// lock file. It creates nothing.
func (b *Backend) Alive(ctx context.Context, worker string) (bool, error) {
	path, err := b.leasePath(worker)
	if err != nil {
		return false, err
	}
	alive, err := fsx.IsLocked(path)
	if err != nil {
		return false, exitcode.Errorf(exitcode.Internal, "worker lease: %w", err)
	}
	return alive, nil
}

// ---- fsck ----------------------------------------------------------------

// Check implements queue.Backend: it reads everything and writes nothing.
func (b *Backend) Check(ctx context.Context) (*queue.LogCheck, error) {
	rep := &queue.LogCheck{Location: b.dir}
	if _, err := os.Stat(b.dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return rep, exitcode.Errorf(exitcode.NotFound, "queue directory %s: does not exist", b.dir)
		}
		return rep, exitcode.Errorf(exitcode.Internal, "queue directory %s: %w", b.dir, unwrapPath(err))
	}
	snap, err := b.loadSnapshot()
	if err != nil {
		return rep, err
	}
	if snap != nil {
		rep.SnapshotSeq = snap.Seq
	}
	if entries, err := os.ReadDir(b.dir); err == nil {
		for _, e := range entries {
			if isTemp(e.Name()) {
				rep.Notes = append(rep.Notes, e.Name()+": temporary file of an interrupted compaction (the next writer removes it)")
			}
		}
	}
	if h, err := b.LockHolder(); err == nil && h != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the append lock is held by %s; writers wait for it up to the lock timeout", LockName, h))
	}
	l, limit, err := b.checkSegment()
	if errors.Is(err, os.ErrNotExist) {
		rep.Notes = append(rep.Notes, LogName+": absent (no event appended yet)")
		rep.FirstSeq, rep.LastSeq = rep.SnapshotSeq+1, rep.SnapshotSeq
		return rep, nil
	}
	if err != nil {
		return rep, b.ioErr("open", err)
	}
	if b.pin == nil {
		defer l.Close()
	}
	_, last, te, err := b.walk(l, 0, limit, 0, nil, func(evs []*queue.Event, off, end int64) error {
		if rep.FirstSeq == 0 {
			s := evs[0].Seq
			rep.FirstSeq = s
			if snap != nil && s > snap.Seq+1 {
				return &queue.CorruptError{Path: b.logPath, Offset: off, Seq: s, Why: fmt.Sprintf("events %d to %d are in neither the snapshot nor the log", snap.Seq+1, s-1)}
			}
			if snap == nil && s != 1 {
				return &queue.CorruptError{Path: b.logPath, Offset: off, Seq: s, Why: fmt.Sprintf("the log starts at %d and there is no snapshot", s)}
			}
		}
		rep.Events += int64(len(evs))
		rep.LastSeq, rep.Bytes = evs[len(evs)-1].Seq, end
		return nil
	})
	if err != nil {
		return rep, err
	}
	if te != nil {
		size := limit
		if size < 0 {
			if size, err = l.Size(); err != nil {
				return rep, b.ioErr("stat", err)
			}
		}
		rep.TornTail = &queue.TornTail{Offset: te.Offset, Bytes: size - te.Offset}
		rep.Bytes = size
		if te.Why != "an incomplete final line" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("torn tail at byte %d: %s (the next writer cuts it; none of it was acknowledged)", te.Offset, te.Why))
		}
	}
	if last == 0 {
		rep.FirstSeq, rep.LastSeq = rep.SnapshotSeq+1, rep.SnapshotSeq
	}
	return rep, nil
}

// checkSegment is the segment Check reads and how far (-1: to its end):
// a pinned view's, or the one events.log names now.
func (b *Backend) checkSegment() (*fsx.Log, int64, error) {
	if b.pin != nil {
		if b.pin.log == nil {
			return nil, 0, os.ErrNotExist
		}
		return b.pin.log, b.pin.size, nil
	}
	l, err := b.openSegment(true, false)
	return l, -1, err
}
