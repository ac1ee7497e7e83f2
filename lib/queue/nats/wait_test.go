package natsq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// Wait keeps one pull open across calls: waking for each of many appends
// costs no request of its own, and a call that gives up leaves the pull
// for the next one, which still sees what was appended meanwhile.
func TestWaitKeepsItsPullOpen(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "waitpull", Options{})
	w := open(t, srv.URL(), "waitpull", Options{})
	spy, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	var pulls atomic.Int64
	sub, err := spy.Subscribe("$JS.API.CONSUMER.MSG.NEXT.>", func(*nats.Msg) { pulls.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	appendTasks(t, w, 0, 1)
	after := uint64(0)
	for i := 1; i <= 20; i++ {
		if err := b.Wait(bg, after); err != nil {
			t.Fatal(err)
		}
		after = b.wc.last
		appendTasks(t, w, i, i+1)
	}
	if after < 20 {
		t.Fatalf("Wait saw up to %d; want 20", after)
	}
	// A call that gives up returns its context's cause...
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if err := b.Wait(ctx, 21); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a quiet stream = %v; want the deadline", err)
	}
	// ...and the next one sees what came meanwhile.
	appendTasks(t, w, 21, 22)
	if err := b.Wait(bg, 21); err != nil {
		t.Fatal(err)
	}
	if b.wc.last != 22 {
		t.Fatalf("Wait saw up to %d; want 22", b.wc.last)
	}
	spy.Flush()
	if n := pulls.Load(); n != 1 {
		t.Errorf("%d pull requests for 22 wakes; want the one left open", n)
	}
}
