package natsq

import (
	"context"
	"sync"

	"github.com/art-runtime/art/lib/queue"
)

var _ queue.EachAppender = (*Backend)(nil)

// AppendEach implements queue.EachAppender: each call is appended exactly
// as Append appends it (its own conditions, all of it or none, its own
// retries while its outcome is in doubt), and the calls are published
// together instead of one after another: their publishes leave in one
// write to the server and their acknowledgements are awaited at once, so
// a worker filling several free slots pays one catch-up and one round trip
// for all its claims (queue.ClaimN), not one of each per claim. The
// server still stores (and with sync_interval always, syncs) each call
// before acknowledging it: none is reported appended before it is stored.
// The calls are independent, as on the file backend: one that loses its
// condition fails alone. The order of their sequences among themselves is
// the order the server received them in.
func (b *Backend) AppendEach(ctx context.Context, calls [][]queue.Proposal) ([][]*queue.Event, []error) {
	evss, errs := make([][]*queue.Event, len(calls)), make([]error, len(calls))
	if len(calls) == 1 {
		evss[0], errs[0] = b.Append(ctx, calls[0])
		return evss, errs
	}
	var wg sync.WaitGroup
	for i, ps := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evss[i], errs[i] = b.Append(ctx, ps)
		}()
	}
	wg.Wait()
	return evss, errs
}
