package file

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// pinned is what a pinned backend reads instead of the directory's paths:
// the segment open as it was (nil: there was none), its size then, and
// the snapshot's bytes (nil: there was none).
type pinned struct {
	log  *fsx.Log
	size int64
	snap []byte
}

// maxPinTries bounds how often Pin starts again because a compaction
// replaced the log while it pinned it.
const maxPinTries = 100

// Pin opens a read-only view of the queue directory fixed at one moment,
// for checks that read it more than once (fsck): the segment events.log
// names now, open, up to the size it has then, and the snapshot as it is
// then. The pair replays to one state: Pin opens the segment first, reads
// the snapshot, and then confirms that events.log still names that
// segment (else a compaction swapped them meanwhile, and it starts
// again). A compaction writes its snapshot before it replaces the
// segment, so the snapshot read is either the one the segment follows or
// the next one, whose events the segment already holds below the size
// taken last. Whatever writers do after, the view's Snapshot, Read and
// Check see these alone; PinnedLog gives the segment and size to a reader
// of its own (the state index). Close releases it.
func (b *Backend) Pin() (*Backend, error) {
	for try := 0; ; try++ {
		p, again, err := b.pinOnce()
		if err != nil {
			return nil, err
		}
		if !again {
			v := &Backend{dir: b.dir, logPath: b.logPath, lockPath: b.lockPath, snapPath: b.snapPath, workers: b.workers,
				opts: b.opts, notify: make(chan struct{}), own: map[int64]ownRun{}, pin: p}
			v.opts.ReadOnly = true
			v.commitFn = v.commitCalls
			v.locker = fsx.NewLocker(v.lockPath, v.opts.LockTimeout)
			return v, nil
		}
		if try == maxPinTries {
			return nil, exitcode.Errorf(exitcode.Internal, "queue %s: the log was replaced %d times while it was being pinned", b.dir, maxPinTries)
		}
	}
}

// pinOnce tries to pin once; again says a compaction got in the way.
func (b *Backend) pinOnce() (p *pinned, again bool, err error) {
	p = &pinned{}
	l, err := b.openSegment(true, false)
	switch {
	case err == nil:
		p.log = l
	case !errors.Is(err, os.ErrNotExist):
		return nil, false, b.ioErr("open", err)
	}
	fail := func(err error) (*pinned, bool, error) {
		if p.log != nil {
			p.log.Close()
		}
		return nil, false, err
	}
	p.snap, err = os.ReadFile(b.snapPath)
	if errors.Is(err, os.ErrNotExist) {
		p.snap = nil
	} else if err != nil {
		return fail(exitcode.Errorf(exitcode.Internal, "read %s: %w", b.snapPath, unwrapPath(err)))
	}
	var st unix.Stat_t
	err = lstat(b.logPath, &st)
	switch {
	case p.log == nil && errors.Is(err, os.ErrNotExist):
		return p, false, nil
	case p.log == nil && err == nil:
		return nil, true, nil // created meanwhile
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fail(b.ioErr("stat", err))
	case err != nil || !sameFile(p.log.Info(), &st):
		p.log.Close()
		return nil, true, nil
	}
	p.size = st.Size
	return p, false, nil
}

// PinnedLog is a pinned view's segment (nil when there was none) and the
// size it is read to. It panics on a backend Pin did not make.
func (b *Backend) PinnedLog() (*os.File, int64) {
	if b.pin == nil {
		panic(fmt.Sprintf("queue %s: PinnedLog of a backend that is not pinned", b.dir))
	}
	if b.pin.log == nil {
		return nil, 0
	}
	return b.pin.log.File(), b.pin.size
}
