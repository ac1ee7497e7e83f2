package natsq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// batchSize is what each enqueuer process appends as one atomic batch.
const batchSize = 1000

// batchesMain appends batches of batchSize enqueues (generated ids) to the
// queue until killed: what `artq enqueue --batch` of 1,000 lines does.
func batchesMain() int {
	ctx := context.Background()
	b, err := Open(ctx, os.Getenv("ARTQ_NATSTEST_URL"), os.Getenv("ARTQ_NATSTEST_QUEUE"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer b.Close()
	prefix := os.Getenv("ARTQ_NATSTEST_ID")
	for n := 0; ; n++ {
		ps := make([]queue.Proposal, batchSize)
		for i := range ps {
			ps[i] = queue.Proposal{Any: true, Event: &queue.Event{Type: queue.EventEnqueued,
				Task: fmt.Sprintf("%s-%d-%d", prefix, n, i), MaxAttempts: 1, Manifest: []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)}}
		}
		if _, err := b.Append(ctx, ps); err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			return 1
		}
	}
}

// TestReadersSeeWholeBatches: while processes append 1,000-task batches
// (and are SIGKILLed at random moments, mid-batch as often as not), readers
// never see part of a batch: a fresh replay (status), a reader catching up
// again and again (status --follow, artq work) and the raw event stream
// (log) each always hold a whole number of batches.
func TestReadersSeeWholeBatches(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	const name = "batches"
	open(t, srv.URL(), name, Options{}) // creates the stream
	kills := 12
	if testing.Short() {
		kills = 4
	}
	ctx, stop := context.WithCancel(bg)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop()
		for k := range kills {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), modeEnv+"=batches", "ARTQ_NATSTEST_URL="+srv.URL(),
				"ARTQ_NATSTEST_QUEUE="+name, "ARTQ_NATSTEST_ID=e"+strconv.Itoa(k), noRaceSleep)
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	var mu sync.Mutex
	reads, bad := map[string]int{}, map[string][]int{}
	note := func(what string, n int) {
		mu.Lock()
		defer mu.Unlock()
		reads[what]++
		if n%batchSize != 0 {
			bad[what] = append(bad[what], n)
		}
	}
	reader := func(what string, read func(b *Backend) (int, error)) {
		defer wg.Done()
		b := open(t, srv.URL(), name, Options{ReadOnly: true})
		for ctx.Err() == nil {
			n, err := read(b)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			note(what, n)
		}
	}
	wg.Add(3)
	go reader("status (a fresh replay)", func(b *Backend) (int, error) {
		q, err := queue.Inspect(bg, b)
		if err != nil {
			return 0, err
		}
		return tasksIn(q), nil
	})
	var follow *queue.Queue
	go reader("status --follow (catching up)", func(b *Backend) (int, error) {
		if follow == nil {
			follow = queue.New(b)
		}
		if err := follow.CatchUp(bg); err != nil {
			return 0, err
		}
		return tasksIn(follow), nil
	})
	go reader("log (the events)", func(b *Backend) (int, error) {
		n := 0
		err := b.Read(bg, 0, func(ev *queue.Event) error {
			if ev.Type == queue.EventEnqueued {
				n++
			}
			return nil
		})
		return n, err
	})
	wg.Wait()
	for what, n := range reads {
		t.Logf("%s: %d reads, %d of them partial %v", what, n, len(bad[what]), bad[what])
	}
	if len(bad) > 0 {
		t.Fatalf("readers saw part of a batch")
	}
}

// tasksIn is how many tasks q's state holds, as status --summary counts.
func tasksIn(q *queue.Queue) int {
	n := 0
	q.View(bg, func(st *queue.State) error { n = st.Len(); return nil })
	return n
}
