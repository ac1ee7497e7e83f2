package natsq

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// Each call of AppendEach stands alone: one that lost its condition fails
// and appends nothing, the others are stored with their sequences.
func TestAppendEachIndependentCalls(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "each", Options{})
	appendTasks(t, b, 0, 1) // t0 at 1
	calls := [][]queue.Proposal{enqueue("a"), enqueue("t0"), enqueue("c")}
	evss, errs := b.AppendEach(bg, calls)
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors = %v; want the first and last appended", errs)
	}
	if !errors.Is(errs[1], queue.ErrStale) {
		t.Fatalf("second call (t0 exists, expect 0) = %v; want ErrStale", errs[1])
	}
	got := []uint64{evss[0][0].Seq, evss[2][0].Seq}
	slices.Sort(got)
	if !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("sequences = %v; want [2 3]", got)
	}
	if seqs := readSeqs(t, b, 0); !slices.Equal(seqs, []uint64{1, 2, 3}) {
		t.Fatalf("stream holds %v; want [1 2 3]", seqs)
	}
}

// A worker filling several slots claims them with one decision: every
// claim lands, each task once.
func TestClaimNOnNATS(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "claimn", Options{})
	appendTasks(t, b, 0, 5)
	l, err := b.AcquireLease(bg, "w1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	q, err := queue.Open(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := q.ClaimN(bg, "w1", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	if !slices.Equal(ids, []string{"t0", "t1", "t2"}) {
		t.Fatalf("claimed %v; want [t0 t1 t2]", ids)
	}
	// Another worker (w1's lease is live: its tasks are not recovered)
	// takes what is left.
	other := open(t, srv.URL(), "claimn", Options{})
	q2, err := queue.Open(bg, other)
	if err != nil {
		t.Fatal(err)
	}
	ts, err = q2.ClaimN(bg, "w2", nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	if !slices.Equal(ids, []string{"t3", "t4"}) {
		t.Fatalf("second worker claimed %v; want [t3 t4]", ids)
	}
}
