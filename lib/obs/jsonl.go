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

	"github.com/art-runtime/art/lib/fsx"
)

// JSONL is a sink that appends envelopes to an owner-only regular file, one
// canonical record per line. The file's mechanics (the lock file, the
// bounded wait, catch-up from an offset, torn-tail trim, the undone short
// write, shared fsyncs) are fsx.Log's, with their rules in
// docs/architecture.md, "Durable append-only files"; the sink adds
// envelopes, ids and sequences, and these guarantees of its own:
//
//   - Refusals before anything is written: the final path component must not
//     be a symlink (O_NOFOLLOW), the file must be regular (checked on the
//     open descriptor, opened non-blocking so a FIFO cannot hang us), owned
//     by the effective user and not accessible by group or others. A new
//     file is created 0600.
//   - A sink whose short write could not be cut off, or whose fsync failed,
//     is poisoned: every later append fails rather than write after half a
//     record or report success for lost data.
//   - Under the lock an appender first reads what others appended since its
//     last look, so the per-subject sequence the Emitter allocates continues
//     theirs. Readers (verify, tail) take no lock.
//   - Recovery on open reads only the last RecoverBytes of the file: it
//     truncates a torn last record (under the lock, fsync'd), refuses a
//     corrupt record or one of another version, and learns the recent ids
//     and each subject's last sequence. The bound is a trade: a subject
//     whose last event is older than the window restarts at 1 (artobs
//     verify reports it as out of order), and an id older than the window
//     is not recognised as a duplicate by an appender (an older seq for its
//     subject is still refused as stale).
//   - With Sync, each append returns after an fsync covering its record;
//     concurrent appenders share one fsync (group commit).
type JSONL struct {
	path   string
	window int64

	mu       sync.Mutex // held from begin to end
	log      *fsx.Log
	size     int64 // the file size after our last append or catch-up
	last     map[string]uint64
	ids      *idSet
	poisoned error
	closed   bool
	order    string
	rec      Recovery
	buf      []byte

	sync bool
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

	faults *fsx.LogFaults // tests: a full disk, a failing device
}

// DefaultLockWait is how long an append waits for the file lock.
const DefaultLockWait = 10 * time.Second

// DefaultRecoverBytes is the tail window: a few thousand typical events.
const DefaultRecoverBytes = 4 << 20

// minRecoverBytes keeps the window larger than any record.
const minRecoverBytes = 256 << 10

// LockSuffix names a sink's lock file: PATH + LockSuffix.
const LockSuffix = ".lock"

// OpenJSONL opens (creating 0600) and recovers the JSONL file at path.
func OpenJSONL(path string, o JSONLOptions) (*JSONL, error) {
	name := "jsonl:" + path
	if path == "" {
		return nil, &SinkError{Sink: name, Op: "open", Err: fmt.Errorf("empty path: %w", ErrSinkSpec)}
	}
	window := o.RecoverBytes
	if window <= 0 {
		window = DefaultRecoverBytes
	}
	window = max(window, minRecoverBytes)
	remember := o.RememberIDs
	if remember <= 0 {
		remember = DefaultRememberIDs
	}
	wait := o.LockWait
	if wait <= 0 {
		wait = DefaultLockWait
	}
	var order string
	l, err := fsx.OpenLog(path, fsx.LogOptions{
		Create:   true,
		LockPath: path + LockSuffix,
		LockWait: wait,
		MaxLine:  int(window) + 1,
		Faults:   o.faults,
		Check: func(_ *os.File, st *unix.Stat_t) error {
			switch {
			case int(st.Uid) != os.Geteuid():
				return ErrOwner
			case uint32(st.Mode)&0o077 != 0:
				return fmt.Errorf("mode %#o: %w", uint32(st.Mode)&0o777, ErrPermissions)
			}
			order = strconv.FormatUint(uint64(st.Dev), 16) + ":" + strconv.FormatUint(uint64(st.Ino), 16)
			return nil
		},
	})
	if err != nil {
		switch {
		case errors.Is(err, fsx.ErrSymlink):
			err = ErrSymlink
		case errors.Is(err, fsx.ErrNotRegular):
			err = ErrNotRegular
		}
		return nil, &SinkError{Sink: name, Op: "open", Err: err}
	}
	j := &JSONL{
		path:   path,
		window: window,
		log:    l,
		last:   map[string]uint64{},
		ids:    newIDSet(remember),
		order:  order,
		sync:   o.Sync,
	}
	if err := j.begin(); err != nil {
		l.Close()
		return nil, err
	}
	j.end()
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

// begin locks the sink (in-process mutex, then the lock file's flock,
// waiting at most LockWait) and catches up with the file: it must be
// followed by end.
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
	if err := j.log.Lock(); err != nil {
		j.mu.Unlock()
		var te *fsx.LockTimeoutError
		if errors.As(err, &te) {
			err = fmt.Errorf("the file lock was held by another process for %s: %w", te.Waited, ErrBusy)
		}
		return j.err("lock", err)
	}
	if err := j.catchUp(); err != nil {
		j.end()
		return err
	}
	return nil
}

// end releases the flock and the mutex.
func (j *JSONL) end() {
	_ = j.log.Unlock()
	j.mu.Unlock()
}

// catchUp reads what was appended since j.size (by other processes), or the
// tail window when that is too much or the file shrank.
func (j *JSONL) catchUp() error {
	size, err := j.log.Size()
	if err != nil {
		return j.err("stat", err)
	}
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

// scan reads records in [from, size) from the offset on, never from the
// start unless from is 0. partial: from may be mid-record, so the first
// line is skipped. A torn last record is trimmed (synced).
func (j *JSONL) scan(from, size int64, partial bool) error {
	rd := j.log.Lines(from, size)
	skip := partial
	for {
		line, off, complete, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return j.err("recover", err)
		}
		if !complete {
			if skip || rd.Overlong() {
				return j.err("recover", fmt.Errorf("%w: no record boundary in the last %d bytes", ErrCorrupt, size-from))
			}
			if err := j.log.Trim(off); err != nil {
				return j.err("truncate torn record", err)
			}
			j.rec.TornBytes += size - off
			size = off
			break
		}
		if skip {
			skip = false
			continue
		}
		if err := j.learn(line, off); err != nil {
			return err
		}
	}
	j.size = size
	return nil
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
// what a partial one wrote is cut off again (fsx.Log.Append).
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
	if err := j.log.Broken(); err != nil {
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
	if err := j.log.Append(j.buf, j.size); err != nil {
		if errors.Is(err, fsx.ErrLogBroken) {
			j.poisoned = fmt.Errorf("%w: %v", ErrPoisoned, err)
			err = j.poisoned
		}
		return failAll(j.err("append", err))
	}
	j.size += int64(len(j.buf))
	for _, p := range fresh {
		j.ids.add(p.d)
		j.last[p.subject] = max(j.last[p.subject], p.seq)
	}
	if !j.sync {
		return outs, errs, nil
	}
	gen := j.log.Wrote()
	return outs, errs, func() error {
		if err := j.log.SyncThrough(gen); err != nil {
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
	if err := j.log.Close(); err != nil {
		return j.err("close", err)
	}
	return nil
}
