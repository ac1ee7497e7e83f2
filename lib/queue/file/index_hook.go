package file

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/queue"
)

// ReadFrom reads the segment open as f from byte off on (up to byte limit,
// or its end when limit is -1), where off is just
// past a whole unit whose last record has sequence prev, and calls fn for
// every event after it exactly as Read delivers them: a batch only once
// its commit is read, a torn tail not at all, the sequence checked to go
// on from prev, damage a *queue.CorruptError. It returns the offset just
// past the last whole unit read and that unit's last sequence (off and prev
// when there is none). It never writes.
//
// It is the hook of the state index (lib/queue/stateindex), which covers
// the log through some record and reads only what was appended after it.
func ReadFrom(ctx context.Context, f *os.File, off, limit int64, prev uint64, fn func(*queue.Event) error) (end int64, last uint64, err error) {
	end, last = off, prev
	w := walker{rd: fsx.NewLineReader(f, off, limit, maxRecord), path: f.Name(), prev: prev}
	for {
		evs, _, e, err := w.next()
		if err == io.EOF {
			return end, last, nil
		}
		var te *tornError
		if errors.As(err, &te) {
			return end, last, nil
		}
		if err != nil {
			return end, last, err
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return end, last, err
			}
		}
		end, last = e, evs[len(evs)-1].Seq
		if ctx.Err() != nil {
			return end, last, context.Cause(ctx)
		}
	}
}
