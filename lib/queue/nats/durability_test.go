package natsq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/queuetest"
	"github.com/art-runtime/art/lib/queue/worker"
)

// TestServerKilledMidAppends: writers append chains of conditional events
// (single events and two-event atomic batches) while the server process is
// killed with SIGKILL and started again on the same store. Every append
// that was acknowledged is in the log, byte for byte and at its sequence;
// none appears twice; no batch is half there; and the appends in flight
// when the server died complete after it is back. With sync_interval
// always, and with the default sync: the process dying loses nothing the
// server acknowledged either way (the machine losing power is another
// matter, see docs/artq-nats.md).
func TestServerKilledMidAppends(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		name := "sync=always"
		if noSync {
			name = "sync=default"
		}
		t.Run(name, func(t *testing.T) { serverKilledMidAppends(t, noSync) })
	}
}

func serverKilledMidAppends(t *testing.T, noSync bool) {
	srv := startServerProc(t, noSync)
	const writers = 4
	rounds := 60
	if testing.Short() {
		rounds = 25
	}
	type acked struct {
		ev  *queue.Event
		rec string
	}
	var (
		mu      sync.Mutex
		acks    []acked
		failed  = map[string]error{}
		started = make(chan struct{}, writers*rounds)
	)
	var wg sync.WaitGroup
	var handles []*Backend
	defer func() {
		var n int64
		for _, h := range handles {
			n += h.recognised.Load()
		}
		t.Logf("%d appends in flight at a kill were found stored when retried", n)
	}()
	for w := range writers {
		b := open(t, srv.url, "q", Options{RetryTimeout: 30 * time.Second, Timeout: 2 * time.Second})
		handles = append(handles, b)
		id := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, err := b.Append(bg, []queue.Proposal{queuetest.Enq(id)})
			if err != nil {
				mu.Lock()
				failed[id] = err
				mu.Unlock()
				return
			}
			last := evs[0].Seq
			for i := range rounds {
				ps := []queue.Proposal{note(id, i, "a", last)}
				if i%2 == 1 {
					ps = append(ps, note(id, i, "b", 0)) // follows: unchecked
				}
				evs, err := b.Append(bg, ps)
				if err != nil {
					mu.Lock()
					failed[id] = fmt.Errorf("round %d: %w", i, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, ev := range evs {
					acks = append(acks, acked{ev, string(queue.AppendRecord(nil, ev))})
				}
				mu.Unlock()
				last = evs[len(evs)-1].Seq
				started <- struct{}{}
			}
		}()
	}
	// Kill the server twice while the writers run.
	for kill := 0; kill < 2; kill++ {
		for range writers * rounds / 4 {
			<-started
		}
		srv.kill()
		time.Sleep(300 * time.Millisecond)
		srv.start()
	}
	wg.Wait()
	for id, err := range failed {
		t.Errorf("writer %s: %v", id, err)
	}
	r := open(t, srv.url, "q", Options{ReadOnly: true})
	log := queuetest.ReadAll(t, r, 0)
	bySeq := map[uint64]string{}
	seen := map[string]uint64{}
	for _, ev := range log {
		rec := string(queue.AppendRecord(nil, ev))
		bySeq[ev.Seq] = rec
		key := ev.Task + "/" + ev.Reason
		if prev, dup := seen[key]; dup {
			t.Errorf("event %s appears twice, at %d and %d", key, prev, ev.Seq)
		}
		seen[key] = ev.Seq
	}
	for _, a := range acks {
		if bySeq[a.ev.Seq] != a.rec {
			t.Errorf("acknowledged event at %d lost or changed:\nhave %s\nwant %s", a.ev.Seq, bySeq[a.ev.Seq], a.rec)
		}
	}
	// Batches are whole: every "b" event directly follows its "a".
	for _, ev := range log {
		if strings.HasSuffix(ev.Reason, "/b") {
			a := strings.TrimSuffix(ev.Reason, "/b") + "/a"
			if seen[ev.Task+"/"+a] != ev.Seq-1 {
				t.Errorf("batch half: %s/%s at %d without its first half just before", ev.Task, ev.Reason, ev.Seq)
			}
		}
	}
	if want := writers * (1 + rounds + rounds/2); len(log) != want {
		t.Errorf("log holds %d events; want %d", len(log), want)
	}
	if rep, err := r.Check(bg); err != nil || rep.Events != int64(len(log)) {
		t.Errorf("Check = %+v, %v", rep, err)
	}
}

// note is a distinguishable event for task id (the backend does not apply
// the reducer; these tests check storage, not transitions).
func note(id string, round int, half string, expect uint64) queue.Proposal {
	return queue.Proposal{Event: &queue.Event{Time: time.Now().UTC(), Type: queue.EventCancelRequested, Task: id, Attempt: 1, Reason: fmt.Sprintf("%d/%s", round, half)}, Expect: expect}
}

// TestPartitionLongerThanLease: the server disappears for longer than a
// worker's lease. The worker's appends fail with a clear error instead of
// hanging, its lease reports Lost, the lease key is gone when the server is
// back, another worker recovers the task, and the first worker's late
// append is refused as stale: the log, not the clock, fences it.
func TestPartitionLongerThanLease(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	const lease = 2 * time.Second
	a := open(t, srv.URL(), "q", Options{RetryTimeout: time.Second, Timeout: time.Second})
	l, err := a.AcquireLease(bg, "wA", lease)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	enq := queuetest.MustAppend(t, a, queuetest.Enq("job"))[0]
	start := queuetest.MustAppend(t, a, queuetest.Ev(queue.EventStarted, "job", "wA", enq.Seq))[0]

	srv.Stop()
	down := time.Now()
	_, err = a.Append(bg, []queue.Proposal{queuetest.Ev(queue.EventTrace, "job", "", start.Seq)})
	if err == nil || exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "append to") {
		t.Errorf("append with the server down: %v; want a clear exit-125 error", err)
	}
	select {
	case <-l.Lost():
		if d := time.Since(down); d > lease+time.Second {
			t.Errorf("Lost fired %s after the server went away; the lease is %s", d, lease)
		}
	case <-time.After(lease + 3*time.Second):
		t.Fatal("the lease was not reported lost")
	}
	time.Sleep(time.Second)
	srv.Restart()

	b := open(t, srv.URL(), "q", Options{})
	waitLeaseGone(t, b, "wA", 5*time.Second, "the lost worker's lease is still alive after the server restarted")
	q, err := queue.Open(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := q.Status(bg, "job")
	if ts.State != queue.StateQueued || ts.Attempts != 1 {
		t.Fatalf("after recovery: %+v; want queued, attempt 1 preserved", ts)
	}
	// The first worker's connection comes back; its append is fenced.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = a.Append(bg, []queue.Proposal{queuetest.Ev(queue.EventTrace, "job", "", start.Seq)})
		if err == nil || errors.Is(err, queue.ErrStale) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !errors.Is(err, queue.ErrStale) {
		t.Errorf("the lost worker's late append: %v; want ErrStale", err)
	}
}

// TestLeaseExpiresWithoutRelease: a holder that stops renewing (its process
// died; here its backend is closed without Release) loses the lease after
// its TTL, and only then.
func TestLeaseExpiresWithoutRelease(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	a, err := Open(bg, srv.URL(), "q", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcquireLease(bg, "w1", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	b := open(t, srv.URL(), "q", Options{})
	// Renewed while the holder lives.
	time.Sleep(2500 * time.Millisecond)
	if alive, _ := b.Alive(bg, "w1"); !alive {
		t.Fatal("a renewed lease expired")
	}
	a.Close()
	died := time.Now()
	if alive, _ := b.Alive(bg, "w1"); !alive {
		t.Fatal("the lease vanished at once; it should outlive its holder by its TTL")
	}
	waitLeaseGone(t, b, "w1", 5*time.Second-time.Since(died), "the lease did not expire")
	// Its tasks are recovered by the shared rules; the id can be reused.
	l, err := b.AcquireLease(bg, "w1", 2*time.Second)
	if err != nil {
		t.Fatalf("AcquireLease after expiry: %v", err)
	}
	l.Release()
}

// TestLeaseLostWhenKeyVanishes: if the key is not the one the holder wrote
// last (it expired during a partition and was removed), the next renewal is
// refused and Lost fires at once rather than reviving the lease.
func TestLeaseLostWhenKeyVanishes(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	a := open(t, srv.URL(), "q", Options{})
	l, err := a.AcquireLease(bg, "w1", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := a.js.KeyValue(bg, a.leaseKV)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(bg, "w1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("the renewal revived a removed lease instead of reporting it lost")
	}
	if alive, _ := a.Alive(bg, "w1"); alive {
		t.Error("the removed lease is alive again")
	}
	l.Release()
}

// TestMinLease: NATS TTLs are whole seconds.
func TestMinLease(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	a := open(t, srv.URL(), "q", Options{})
	if _, err := a.AcquireLease(bg, "w1", 500*time.Millisecond); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a 500ms lease: %v; want exit 2", err)
	}
	if got := ttlHeader(1500 * time.Millisecond); got != "2s" {
		t.Errorf("ttlHeader(1.5s) = %s; want 2s (rounded up: a key may outlive, never undercut, its lease)", got)
	}
}

// TestWaitAcrossRestart: a Wait in progress when the server restarts
// returns (early or on the append) and a following Read sees the append.
func TestWaitAcrossRestart(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	a := open(t, srv.URL(), "q", Options{})
	b := open(t, srv.URL(), "q", Options{Timeout: time.Second})
	queuetest.MustAppend(t, a, queuetest.Enq("x"))
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for {
			if err := b.Wait(ctx, 1); err != nil {
				done <- err
				return
			}
			var n int
			if err := b.Read(ctx, 1, func(*queue.Event) error { n++; return nil }); err == nil && n > 0 {
				done <- nil
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := a.Append(bg, []queue.Proposal{queuetest.Enq("y")}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("append after restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait/Read across a restart: %v", err)
	}
}

// TestWorkerRidesOutShortOutage: the server goes away for less than the
// worker's lease while a task runs. The task keeps running, the worker
// reconnects, records the result, and nothing is recovered or run twice.
func TestWorkerRidesOutShortOutage(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "q", Options{})
	q, err := queue.Open(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	task, _ := queue.ArgvTask([]string{"true"})
	if _, err := q.Enqueue(bg, []queue.EnqueueRequest{{ID: "job", Task: task, MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	release := make(chan struct{})
	var runs atomic.Int32
	run := func(ctx context.Context, p *execx.Policy, tk *execx.Task, opt execx.Options) (*execx.Result, error) {
		runs.Add(1)
		close(running)
		<-release
		return noop(ctx, p, tk, opt)
	}
	wb := open(t, srv.URL(), "q", Options{})
	wq, err := queue.Open(bg, wb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(bg)
	done := make(chan error, 1)
	go func() {
		_, err := worker.Work(ctx, wq, worker.Config{ID: "w1", Policy: pol, Mode: worker.Serve, Poll: 100 * time.Millisecond, Lease: 10 * time.Second, Run: run})
		done <- err
	}()
	<-running
	srv.Stop()
	time.Sleep(1500 * time.Millisecond)
	srv.Restart()
	close(release)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ts, err := q.Status(bg, "job")
		if err == nil && ts.State == queue.StateSucceeded {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the worker stopped during a short outage: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not finish after the server came back: %+v %v", ts, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop := errors.New("test over")
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("worker = %v; want it to have run until stopped", err)
	}
	var types []string
	for _, ev := range queuetest.ReadAll(t, b, 0) {
		types = append(types, string(ev.Type))
	}
	if got := strings.Join(types, " "); got != "enqueued started trace succeeded" || runs.Load() != 1 {
		t.Errorf("log = %s, runs = %d; want one clean run", got, runs.Load())
	}
}
