package stateindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// Fsck is `artq fsck` of a file queue: queue.FsckWith over one view of
// the directory pinned at one moment (file.Backend.Pin: the segment, its
// size and the snapshot, which replay to one state), with the index
// checked against the replay of that same view. The index is opened
// first: whatever writers do next, it covers no more of the segment than
// the size pinned after it (an index binds to records already written,
// and a segment only grows), and its tail is read up to that size. So
// appends, compactions and index rewrites while fsck reads never make a
// healthy queue look corrupt, and real damage still does.
func Fsck(ctx context.Context, b *file.Backend) (*queue.CheckReport, error) {
	path := filepath.Join(b.Dir(), FileName)
	idx, ierr := os.Open(path)
	if ierr == nil {
		defer func() {
			if idx != nil {
				idx.Close()
			}
		}()
	}
	pb, err := b.Pin()
	if err != nil {
		return &queue.CheckReport{}, err
	}
	defer pb.Close()
	return queue.FsckWith(ctx, pb, func(st *queue.State) (string, error) {
		if ierr != nil {
			return check(path, nil, ierr, st)
		}
		lf, size := pb.PinnedLog()
		if lf == nil {
			return check(path, nil, errors.New("no log to bind it to"), st)
		}
		v, err := load(ctx, idx, lf, size)
		if err == nil {
			idx = nil // the view's now: check closes it
		}
		return check(path, v, err, st)
	})
}
