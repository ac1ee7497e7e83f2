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
// Writers (Open without ReadOnly) verify the whole segment once when they
// open it (every checksum, the sequence, every batch: nothing is appended
// to a corrupt log), take the lock for each commit (waiting at most
// Options.LockTimeout, then failing with the holder's pid and command),
// catch up on records other processes appended, cut a torn tail (recording
// a truncated event), check each proposal's condition, write the commit
// with one write(2) and one fdatasync(2), and only then report success. The
// events of one multi-event Append are a batch (see walker in scan.go):
// readers apply it only once its commit record is read, and a writer cuts a
// batch a crash left without one, whole. Concurrent appenders in
// one process are batched by a leader that commits for all of them (group
// commit). A write that fails is undone with ftruncate; a sync that fails
// leaves the page cache in doubt, so the backend refuses all further appends
// until it is reopened.
//
// Readers (ReadOnly) never create, lock, truncate or remove anything; a torn
// tail is simply not read. Compaction writes the snapshot first and then
// atomically replaces events.log with a new segment that holds the events
// after the snapshot and a compacted event; at every point in between, the
// snapshot plus the events.log on disk replay to the same state.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
type Backend struct {
	dir, logPath, lockPath, snapPath, workers string
	opts                                      Options

	// Commit side, held by the group-commit leader or a compaction.
	cmu    sync.Mutex
	w      *os.File    // events.log, O_RDWR|O_APPEND
	wInfo  os.FileInfo // identity of w, to notice a compaction's rename
	wEnd   int64       // offset just past the last good record
	wSeq   uint64      // sequence of the last record (or the snapshot's)
	broken error       // a failed sync: refuse further appends
	buf    []byte

	imu sync.Mutex
	idx index

	// Group commit queue.
	gmu     sync.Mutex
	pending []*request
	leading bool

	// Read side.
	rmu sync.Mutex
	rc  *cursor

	// Appends in this process wake Wait at once.
	nmu    sync.Mutex
	notify chan struct{}

	// Wait's cache of the log's last sequence, keyed by file identity/size.
	tmu      sync.Mutex
	tailInfo os.FileInfo
	tailSeq  uint64
}

var _ queue.Backend = (*Backend)(nil)

// Open opens the queue directory dir. A writable backend creates dir
// (0700), cuts a torn tail and records a truncated event for it, and removes
// temporary files left by a crashed compaction.
func Open(dir string, opts Options) (*Backend, error) {
	if opts.WatchInterval <= 0 {
		opts.WatchInterval = 100 * time.Millisecond
	}
	b := &Backend{
		dir:      dir,
		logPath:  filepath.Join(dir, LogName),
		lockPath: filepath.Join(dir, LockName),
		snapPath: filepath.Join(dir, SnapshotName),
		workers:  filepath.Join(dir, WorkersDir),
		opts:     opts,
		notify:   make(chan struct{}),
	}
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
	lk, err := b.lock()
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
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

// Close releases the backend's files. It does not wait for appends in
// flight; callers stop appending first.
func (b *Backend) Close() error {
	b.cmu.Lock()
	b.closeWriter()
	b.cmu.Unlock()
	b.rmu.Lock()
	if b.rc != nil {
		b.rc.f.Close()
		b.rc = nil
	}
	b.rmu.Unlock()
	return nil
}

func (b *Backend) closeWriter() {
	if b.w != nil {
		b.w.Close()
		b.w, b.wInfo = nil, nil
	}
}

func (b *Backend) hook(step string) error {
	if b.opts.hook != nil {
		return b.opts.hook(step)
	}
	return nil
}

// ---- writing -------------------------------------------------------------

// prepareLocked makes w, wEnd and wSeq describe events.log as it is now and
// catches up on records appended by other processes. It cuts a torn tail
// (synced) and returns it, so the caller records a truncated event. Called
// with cmu and the flock held.
func (b *Backend) prepareLocked() (*queue.TornTail, error) {
	fi, err := os.Stat(b.logPath)
	if errors.Is(err, os.ErrNotExist) {
		b.closeWriter()
		f, err := os.OpenFile(b.logPath, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, fsx.FileMode)
		if err != nil {
			return nil, b.ioErr("create", err)
		}
		if err := fsx.SyncDir(b.dir); err != nil {
			f.Close()
			return nil, b.ioErr("create", err)
		}
		seq, err := b.snapshotSeq()
		if err != nil {
			f.Close()
			return nil, err
		}
		if b.wInfo, err = f.Stat(); err != nil {
			f.Close()
			return nil, b.ioErr("stat", err)
		}
		b.w, b.wEnd, b.wSeq = f, 0, seq
		return nil, nil
	}
	if err != nil {
		return nil, b.ioErr("stat", err)
	}
	if b.w == nil || !os.SameFile(b.wInfo, fi) {
		b.closeWriter()
		f, err := os.OpenFile(b.logPath, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			return nil, b.ioErr("open", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, b.ioErr("stat", err)
		}
		// A writer reads the whole segment once when it opens it: every
		// record's checksum, the sequence and every batch, so that nothing
		// is ever appended to a corrupt log (whatever the append needs to
		// know of it), and a torn tail is told from damage.
		end, last, torn, err := b.verify(f, info.Size())
		if err != nil {
			f.Close()
			return nil, b.readErr(err)
		}
		b.w, b.wInfo, b.wEnd = f, info, end
		if last != 0 {
			b.wSeq = last
		} else if b.wSeq, err = b.snapshotSeq(); err != nil {
			return nil, err
		}
		if torn != nil {
			return torn, b.cut(torn)
		}
		return nil, nil
	}
	info, err := b.w.Stat()
	if err != nil {
		return nil, b.ioErr("stat", err)
	}
	size := info.Size()
	switch {
	case size == b.wEnd:
		return nil, nil
	case size < b.wEnd:
		return nil, &queue.CorruptError{Path: b.logPath, Offset: size, Why: fmt.Sprintf("the log shrank from %d to %d bytes behind this writer's back", b.wEnd, size)}
	}
	// Records appended by another process since our last commit.
	w := newWalker(b.w, b.logPath, b.wEnd, size, b.wSeq, nil)
	for {
		evs, _, end, err := w.next()
		if err == io.EOF {
			return nil, nil
		}
		var te *tornError
		if errors.As(err, &te) {
			// We hold the lock, so no append is in progress: what is
			// left is a crashed writer's. A batch without its commit is
			// cut whole.
			torn := &queue.TornTail{Offset: te.Offset, Bytes: size - te.Offset}
			return torn, b.cut(torn)
		}
		if err != nil {
			return nil, b.readErr(err)
		}
		for _, ev := range evs {
			b.feed(ev)
		}
		b.wSeq, b.wEnd = evs[len(evs)-1].Seq, end
	}
}

// verify walks a whole segment (see walker) and returns the offset just
// past its last whole unit, that unit's last sequence (0: none), and the
// torn tail to cut, if any. Damage is a *queue.CorruptError.
func (b *Backend) verify(f *os.File, size int64) (end int64, last uint64, torn *queue.TornTail, err error) {
	w := newWalker(f, b.logPath, 0, size, 0, cheap)
	for {
		evs, _, e, err := w.next()
		if err == io.EOF {
			return end, last, nil, nil
		}
		var te *tornError
		if errors.As(err, &te) {
			return end, last, &queue.TornTail{Offset: te.Offset, Bytes: size - te.Offset}, nil
		}
		if err != nil {
			return 0, 0, nil, err
		}
		end, last = e, evs[len(evs)-1].Seq
	}
}

// cut truncates a torn tail and syncs, so that a record appended next is
// not glued to a fragment.
func (b *Backend) cut(t *queue.TornTail) error {
	if err := b.w.Truncate(t.Offset); err != nil {
		return b.ioErr("truncate torn tail", err)
	}
	if err := datasync(b.w); err != nil {
		b.broken = b.ioErr("sync", err)
		return b.broken
	}
	b.wEnd = t.Offset
	return nil
}

// request is one Append call waiting in the group-commit queue.
type request struct {
	ps   []queue.Proposal
	evs  []*queue.Event
	err  error
	wake chan struct{} // closed when done, or when made leader
	done bool          // set before wake is closed
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
	for i := range ps {
		if ps[i].Event == nil || ps[i].Event.Seq != 0 {
			return nil, exitcode.Errorf(exitcode.Internal, "append: proposal %d has no event or a sequence already", i)
		}
	}
	r := &request{ps: ps, wake: make(chan struct{})}
	if b.opts.NoGroupCommit {
		b.cmu.Lock()
		b.commit([]*request{r})
		b.cmu.Unlock()
		return r.evs, r.err
	}
	b.gmu.Lock()
	b.pending = append(b.pending, r)
	lead := !b.leading
	b.leading = true
	b.gmu.Unlock()
	if !lead {
		// Woken either done (a leader committed us) or made leader.
		<-r.wake
		if r.done {
			return r.evs, r.err
		}
	}
	// Leader: commit everything queued (our own request included), then
	// hand the lead to the next waiter so no caller waits for others.
	b.gmu.Lock()
	batch := b.pending
	b.pending = nil
	b.gmu.Unlock()
	b.cmu.Lock()
	b.commit(batch)
	b.cmu.Unlock()
	b.gmu.Lock()
	for _, q := range batch {
		q.done = true
		if q != r {
			close(q.wake)
		}
	}
	if len(b.pending) > 0 {
		close(b.pending[0].wake) // not done: it leads next
	} else {
		b.leading = false
	}
	b.gmu.Unlock()
	return r.evs, r.err
}

// commit writes the requests that pass their conditions with one write and
// one sync. Called with cmu held.
func (b *Backend) commit(batch []*request) {
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil {
				r.err, r.evs = err, nil
			}
		}
	}
	if b.broken != nil {
		fail(b.broken)
		return
	}
	lk, err := b.lock()
	if err != nil {
		fail(err)
		return
	}
	defer lk.Unlock()
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
	var own []*queue.Event // events written, in order, for the index
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
			b.w.Write(buf[:k-written])
			queue.Crash()
		}
		if _, err := b.w.Write(buf); err != nil {
			werr = b.ioErr("append", err)
			// Undo a partial write so the log ends at its last good record.
			if terr := b.w.Truncate(b.wEnd); terr != nil {
				b.broken = werr
			}
			return
		}
		written += int64(len(buf))
		buf = buf[:0]
	}
	add := func(ev *queue.Event) {
		seq++
		ev.Seq = seq
		if ev.Time.IsZero() {
			ev.Time = now
		}
		buf = queue.AppendRecord(buf, ev)
		buf = append(buf, '\n')
		own = append(own, ev)
		if len(buf) >= writePiece {
			flush()
		}
	}
	if torn != nil {
		add(&queue.Event{Type: queue.EventTruncated, Offset: torn.Offset, Bytes: torn.Bytes, Reason: "torn tail cut by a writer opening the log"})
	}
	needIndex := false
	for _, r := range batch {
		for _, p := range r.ps {
			needIndex = needIndex || !p.Any
		}
	}
	if needIndex {
		if err := b.ensureIndex(); err != nil {
			return err
		}
	}
	group := map[string]uint64{} // a task's latest seq within this commit
	for _, r := range batch {
		checked := map[string]bool{}
		for _, p := range r.ps {
			task := p.Event.Task
			if p.Any || checked[task] {
				continue
			}
			checked[task] = true
			have, ok := group[task]
			if !ok {
				have = b.lastOf(task)
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
		first := seq + 1
		for i, p := range r.ps {
			ev := *p.Event
			// Several events of one call are one batch: each names the
			// first, the last commits it (see walker).
			ev.Batch, ev.Commit = 0, false
			if len(r.ps) > 1 {
				ev.Batch, ev.Commit = first, i == len(r.ps)-1
			}
			add(&ev)
			r.evs[i] = &ev
			if ev.Task != "" && needIndex {
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
	if err := datasync(b.w); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages
		// and cleared the error: nothing written since the last good sync
		// can be trusted, so stop here.
		b.broken = b.ioErr("sync", err)
		b.w.Truncate(b.wEnd)
		return b.broken
	}
	prev := b.wSeq
	b.wEnd += written
	b.wSeq = seq
	b.imu.Lock()
	if b.idx.ok && b.idx.through == prev {
		for _, ev := range own {
			b.idx.apply(ev)
		}
	}
	b.imu.Unlock()
	b.wake()
	return nil
}

// writePiece is the most a commit holds encoded before writing it out.
const writePiece = 1 << 20

func (b *Backend) wake() {
	b.nmu.Lock()
	close(b.notify)
	b.notify = make(chan struct{})
	b.nmu.Unlock()
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
// sequence: what Append's conditions are checked against. It is built
// lazily (only conditional appends need it) and fed by reads and commits.
type index struct {
	ok      bool
	through uint64
	last    map[string]uint64
}

func (x *index) apply(ev *queue.Event) {
	if ev.Task != "" {
		x.last[ev.Task] = ev.Seq
	}
	x.through = ev.Seq
}

func (b *Backend) lastOf(task string) uint64 {
	b.imu.Lock()
	defer b.imu.Unlock()
	return b.idx.last[task]
}

// indexWants reports whether the index is waiting for event seq (so a
// reader must decode it in full rather than skip it).
func (b *Backend) indexWants(seq uint64) bool {
	b.imu.Lock()
	defer b.imu.Unlock()
	return b.idx.ok && b.idx.through+1 == seq
}

// feed applies an event read in order to the index if it is the next one.
func (b *Backend) feed(ev *queue.Event) {
	b.imu.Lock()
	if b.idx.ok && ev.Seq == b.idx.through+1 {
		b.idx.apply(ev)
	}
	b.imu.Unlock()
}

// seedIndex starts the index from a snapshot if it has not started yet.
func (b *Backend) seedIndex(snap *queue.Snapshot) {
	b.imu.Lock()
	defer b.imu.Unlock()
	if b.idx.ok {
		return
	}
	b.idx = index{ok: true, last: make(map[string]uint64, len(snap.Tasks))}
	for i := range snap.Tasks {
		b.idx.last[snap.Tasks[i].ID] = snap.Tasks[i].LastSeq
	}
	b.idx.through = snap.Seq
}

// ensureIndex brings the index up to wSeq, from the snapshot and the log.
// Called with cmu and the flock held.
func (b *Backend) ensureIndex() error {
	b.imu.Lock()
	ok, through := b.idx.ok, b.idx.through
	b.imu.Unlock()
	if ok && through == b.wSeq {
		return nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		if !ok {
			snap, err := b.loadSnapshot()
			if err != nil {
				return err
			}
			if snap == nil {
				snap = &queue.Snapshot{}
			}
			b.seedIndex(snap)
		}
		err := b.scanLog(b.w, b.wEnd, func(ev *queue.Event) error {
			b.feed(ev)
			return nil
		})
		if err != nil {
			return b.readErr(err)
		}
		b.imu.Lock()
		through = b.idx.through
		b.imu.Unlock()
		if through == b.wSeq {
			return nil
		}
		// The log starts after the index: a compaction passed it. Start
		// again from the newest snapshot.
		b.imu.Lock()
		b.idx = index{}
		b.imu.Unlock()
		ok = false
	}
	return &queue.CorruptError{Path: b.logPath, Offset: -1, Why: fmt.Sprintf("the log and the snapshot do not meet (index at %d, log at %d)", through, b.wSeq)}
}

// scanLog decodes every record of f before limit in order (limit is the
// end of a whole unit), checking checksums, sequence and batches.
func (b *Backend) scanLog(f *os.File, limit int64, fn func(*queue.Event) error) error {
	w := newWalker(f, b.logPath, 0, limit, 0, nil)
	for {
		evs, _, _, err := w.next()
		if err == io.EOF {
			return nil
		}
		var te *tornError
		if errors.As(err, &te) {
			return nil // beyond limit only a torn tail can remain
		}
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}

// ---- snapshots and compaction --------------------------------------------

// Snapshot implements queue.Backend.
func (b *Backend) Snapshot(ctx context.Context) (*queue.Snapshot, error) {
	snap, err := b.loadSnapshot()
	if err != nil || snap == nil {
		return snap, err
	}
	b.seedIndex(snap)
	return snap, nil
}

func (b *Backend) loadSnapshot() (*queue.Snapshot, error) {
	f, err := os.Open(b.snapPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "read %s: %w", b.snapPath, unwrapPath(err))
	}
	defer f.Close()
	snap, err := queue.ReadSnapshot(f)
	if err != nil {
		return nil, &queue.CorruptError{Path: b.snapPath, Offset: -1, Why: err.Error(), Err: err}
	}
	return snap, nil
}

// snapshotSeq reads the sequence from the snapshot's header only.
func (b *Backend) snapshotSeq() (uint64, error) {
	f, err := os.Open(b.snapPath)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, exitcode.Errorf(exitcode.Internal, "read %s: %w", b.snapPath, unwrapPath(err))
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
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
	lk, err := b.lock()
	if err != nil {
		return err
	}
	defer lk.Unlock()
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
	// The events after the snapshot, copied verbatim into the new segment.
	var keep []byte
	first := uint64(0)
	err = b.scanLog(b.w, b.wEnd, func(ev *queue.Event) error {
		if first == 0 {
			first = ev.Seq
		}
		if ev.Seq > snap.Seq {
			keep = queue.AppendRecord(keep, ev)
			keep = append(keep, '\n')
		}
		return nil
	})
	if err != nil {
		return b.readErr(err)
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
	prev := b.wSeq
	b.closeWriter()
	if _, err := b.prepareLocked(); err != nil {
		return err
	}
	b.imu.Lock()
	if b.idx.ok && b.idx.through == prev {
		b.idx.apply(ev)
	}
	b.imu.Unlock()
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
	f    *os.File
	info os.FileInfo
	off  int64  // offset just past the last good record read
	seq  uint64 // its sequence; 0 before the first record
}

// Read implements queue.Backend.
func (b *Backend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	c := b.rc
	if c != nil && after < c.seq {
		c.f.Close()
		c, b.rc = nil, nil
	}
	for {
		if c == nil {
			f, err := os.Open(b.logPath)
			if errors.Is(err, os.ErrNotExist) {
				base, err := b.snapshotSeq()
				if err != nil {
					return err
				}
				if after < base {
					return &queue.CompactedError{First: base + 1}
				}
				return nil
			}
			if err != nil {
				return b.ioErr("open", err)
			}
			info, err := f.Stat()
			if err != nil {
				f.Close()
				return b.ioErr("stat", err)
			}
			c = &cursor{f: f, info: info}
			b.rc = c
			if err := b.readFrom(ctx, c, after, true, fn); err != nil {
				return err
			}
		} else if err := b.readFrom(ctx, c, after, false, fn); err != nil {
			return err
		}
		// A compaction renames a new segment over events.log; the old one
		// is frozen from then on. Finish it, then continue in the new one.
		fi, err := os.Stat(b.logPath)
		if err != nil || os.SameFile(fi, c.info) {
			return nil
		}
		if err := b.readFrom(ctx, c, after, false, fn); err != nil {
			return err
		}
		f, err := os.Open(b.logPath)
		if err != nil {
			return nil // replaced again meanwhile: the next Read sees it
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return b.ioErr("stat", err)
		}
		c.f.Close()
		nc := &cursor{f: f, info: info}
		b.rc = nc
		after = max(after, c.seq)
		if err := b.readFrom(ctx, nc, after, true, fn); err != nil {
			return err
		}
		c = nc
	}
}

// readFrom delivers the records of c's file after seq `after`, from c.off
// on, a whole unit at a time: a batch only once its commit is read. fresh
// means c starts at the file's beginning, where the first record tells
// whether earlier events were compacted away. Records the caller already
// has are only checked (checksum, sequence), not decoded, unless the index
// is waiting for them.
func (b *Backend) readFrom(ctx context.Context, c *cursor, after uint64, fresh bool, fn func(*queue.Event) error) error {
	first := fresh || c.seq == 0
	prev := c.seq
	if first {
		prev = 0
	}
	w := newWalker(c.f, b.logPath, c.off, -1, prev, func(seq, unit uint64) bool { return seq > after || b.indexWants(unit) })
	for {
		evs, _, end, err := w.next()
		if err == io.EOF {
			return nil
		}
		var te *tornError
		if errors.As(err, &te) {
			// A torn last line, or an append in progress: stop before it.
			return nil
		}
		if err != nil {
			return b.readErr(err)
		}
		if first {
			first = false
			if s := evs[0].Seq; s > after+1 {
				return &queue.CompactedError{First: s}
			}
		}
		c.off, c.seq = end, evs[len(evs)-1].Seq
		for _, ev := range evs {
			if ev.Type != "" { // decoded in full (feed ignores what is not next)
				b.feed(ev)
			}
		}
		for _, ev := range evs {
			if ev.Seq <= after {
				continue
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// Wait implements queue.Backend.
func (b *Backend) Wait(ctx context.Context, after uint64) error {
	for {
		b.nmu.Lock()
		ch := b.notify
		b.nmu.Unlock()
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
	b.tmu.Lock()
	defer b.tmu.Unlock()
	fi, err := os.Stat(b.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return b.snapshotSeq()
	}
	if err != nil {
		return 0, b.ioErr("stat", err)
	}
	if b.tailInfo != nil && os.SameFile(fi, b.tailInfo) && fi.Size() == b.tailInfo.Size() {
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
	b.tailInfo, b.tailSeq = info, seq
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
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the append lock is held by %s; writers wait for it up to --lock-timeout", LockName, h))
	}
	f, err := os.Open(b.logPath)
	if errors.Is(err, os.ErrNotExist) {
		rep.Notes = append(rep.Notes, LogName+": absent (no event appended yet)")
		rep.FirstSeq, rep.LastSeq = rep.SnapshotSeq+1, rep.SnapshotSeq
		return rep, nil
	}
	if err != nil {
		return rep, b.ioErr("open", err)
	}
	defer f.Close()
	w := newWalker(f, b.logPath, 0, -1, 0, nil)
	var prev uint64
	for {
		evs, off, end, err := w.next()
		if err == io.EOF {
			break
		}
		var te *tornError
		if errors.As(err, &te) {
			fi, serr := f.Stat()
			if serr != nil {
				return rep, b.ioErr("stat", serr)
			}
			rep.TornTail = &queue.TornTail{Offset: te.Offset, Bytes: fi.Size() - te.Offset}
			rep.Bytes = fi.Size()
			if len(evs) == 0 && te.Why != "an incomplete final line" {
				rep.Notes = append(rep.Notes, fmt.Sprintf("torn tail at byte %d: %s (the next writer cuts it; none of it was acknowledged)", te.Offset, te.Why))
			}
			break
		}
		if err != nil {
			return rep, b.readErr(err)
		}
		if prev == 0 {
			s := evs[0].Seq
			rep.FirstSeq = s
			if snap != nil && s > snap.Seq+1 {
				return rep, &queue.CorruptError{Path: b.logPath, Offset: off, Seq: s, Why: fmt.Sprintf("events %d to %d are in neither the snapshot nor the log", snap.Seq+1, s-1)}
			}
			if snap == nil && s != 1 {
				return rep, &queue.CorruptError{Path: b.logPath, Offset: off, Seq: s, Why: fmt.Sprintf("the log starts at %d and there is no snapshot", s)}
			}
		}
		prev = evs[len(evs)-1].Seq
		rep.LastSeq = prev
		rep.Events += int64(len(evs))
		rep.Bytes = end
	}
	if prev == 0 {
		rep.FirstSeq, rep.LastSeq = rep.SnapshotSeq+1, rep.SnapshotSeq
	}
	return rep, nil
}
