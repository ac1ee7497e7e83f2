package stateindex

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// TestFsckLive: fsck of a healthy queue that other writers change while it
// reads — enqueues one by one, each its own append, and (compacting)
// compactions in a loop that replace the snapshot, the log and the index —
// is never reported corrupt: the snapshot, the log and the index it checks
// are pinned together. 150 fsck runs each.
func TestFsckLive(t *testing.T) {
	for _, compacting := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacting=%v", compacting), func(t *testing.T) {
			dir := t.TempDir()
			w, err := file.Open(dir, file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			q := queue.New(w)
			enqueue := func(i int) {
				if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: fmt.Sprintf("t%05d", i), Task: &execx.Task{Program: "true"}, MaxAttempts: 1}}); err != nil {
					t.Error(err)
				}
			}
			for i := range 5 {
				enqueue(i)
			}
			if err := WriteQueue(bg, q); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(bg)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				// One by one, as a shell loop would, and bounded: each
				// fsck replays the whole log, so an unthrottled writer
				// would make the test quadratic in the machine's speed.
				for i := 5; ctx.Err() == nil && i < 2000; i++ {
					enqueue(i)
					time.Sleep(2 * time.Millisecond)
				}
			}()
			if compacting {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cb, err := file.Open(dir, file.Options{})
					if err != nil {
						t.Error(err)
						return
					}
					defer cb.Close()
					cq := queue.New(cb)
					for ctx.Err() == nil {
						if _, err := cq.Compact(bg); err != nil {
							t.Error(err)
							return
						}
						if err := WriteQueue(bg, cq); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			bad := 0
			const runs = 150
			for r := range runs {
				rb, err := file.Open(dir, file.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := Fsck(bg, rb)
				rb.Close()
				if err != nil {
					bad++
					t.Errorf("fsck %d of %d: %v (%+v)", r+1, runs, err, rep.LogCheck)
				}
			}
			stop()
			wg.Wait()
			if bad > 0 {
				t.Fatalf("a healthy live queue reported corrupt %d times of %d", bad, runs)
			}
		})
	}
}
