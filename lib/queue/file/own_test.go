package file

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/art-runtime/art/lib/queue"
)

// TestOwnedAppendCopiesNothing: an append of events handed over
// (Proposal.Owned) allocates no copy of them, measured on the heap: the
// copying append of the same batch allocates at least a whole copy more.
func TestOwnedAppendCopiesNothing(t *testing.T) {
	const n = 20000
	manifest := []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)
	alloc := func(owned bool) uint64 {
		b, err := Open(filepath.Join(t.TempDir(), "q"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		// Warm up: the first commit opens the log.
		if _, err := b.Append(ctx, []queue.Proposal{{Event: &queue.Event{Type: queue.EventEnqueued, Task: "warm", MaxAttempts: 1, Manifest: manifest}, Any: true}}); err != nil {
			t.Fatal(err)
		}
		evs := make([]queue.Event, n)
		ps := make([]queue.Proposal, n)
		for i := range ps {
			evs[i] = queue.Event{Type: queue.EventEnqueued, Task: fmt.Sprintf("t%06d", i), MaxAttempts: 1, Manifest: manifest}
			ps[i] = queue.Proposal{Event: &evs[i], Any: true, Owned: owned}
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		got, err := b.Append(ctx, ps)
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range got {
			if (ev == &evs[i]) != owned {
				t.Fatalf("owned=%v: event %d returned %p, given %p", owned, i, ev, &evs[i])
			}
		}
		return m1.TotalAlloc - m0.TotalAlloc
	}
	copied, owned := alloc(false), alloc(true)
	copySize := uint64(n) * uint64(unsafe.Sizeof(queue.Event{}))
	t.Logf("append of %d events: %d bytes allocated copying, %d owned (a copy is %d)", n, copied, owned, copySize)
	if owned+copySize*9/10 > copied {
		t.Errorf("owned append allocated %d bytes, the copying one %d: want at least %d less (one copy of the events)", owned, copied, copySize*9/10)
	}
}
