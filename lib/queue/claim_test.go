package queue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

func claimQueue(t *testing.T, n int) *queue.Queue {
	t.Helper()
	be, err := file.Open(filepath.Join(t.TempDir(), "q"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	q := queue.New(be)
	reqs := make([]queue.EnqueueRequest, n)
	for i := range reqs {
		task, _ := queue.ArgvTask([]string{"true"})
		reqs[i] = queue.EnqueueRequest{ID: fmt.Sprintf("t%02d", i), Task: task, MaxAttempts: 1}
	}
	if _, err := q.Enqueue(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	return q
}

func claim(t *testing.T, q *queue.Queue, worker string, mine map[string]bool) string {
	t.Helper()
	got, err := q.Claim(context.Background(), worker, mine)
	if err != nil || got == nil {
		t.Fatalf("claim by %s: %v, %v", worker, got, err)
	}
	mine[got.ID] = true
	return got.ID
}

// A worker alone claims in exact enqueue order, however many it runs.
func TestClaimAloneOldestFirst(t *testing.T) {
	q := claimQueue(t, 10)
	mine := map[string]bool{}
	var got []string
	for range 5 {
		got = append(got, claim(t, q, "solo", mine))
	}
	if want := []string{"t00", "t01", "t02", "t03", "t04"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
}

// With other workers' tasks running, a worker claims within the window
// of the oldest queued tasks (twice the workers it sees), never beyond,
// not always at its head, and every task is still claimed exactly once.
func TestClaimWithRivalsStaysInWindow(t *testing.T) {
	q := claimQueue(t, 40)
	if got := claim(t, q, "w-a", map[string]bool{}); got != "t00" {
		t.Fatalf("first claim %s, want t00 (no rival running)", got)
	}
	seen := map[string]bool{"t00": true}
	workers := []string{"w-a", "w-b", "w-c", "w-d"}
	mine := map[string]map[string]bool{}
	for _, w := range workers {
		mine[w] = map[string]bool{}
	}
	spread := 0
	for i := 1; i < 40; i++ {
		w := workers[i%len(workers)]
		var queued []string
		if err := q.View(context.Background(), func(st *queue.State) error {
			for _, c := range st.Queued(16) {
				queued = append(queued, c.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got := claim(t, q, w, mine[w])
		if seen[got] {
			t.Fatalf("%s claimed %s twice", w, got)
		}
		seen[got] = true
		// At most 3 rivals running: a window of at most 2*(3+1) = 8.
		if k := slices.Index(queued, got); k < 0 || k >= 8 {
			t.Fatalf("%s claimed %s, position %d of the queued %v", w, got, k, queued)
		} else if k > 0 {
			spread++
		}
	}
	// Rivals do not all reach for the oldest task (the race they would
	// lose): the ids' hashes put some of them further in.
	if spread == 0 {
		t.Fatal("every claim took the oldest queued task although rival workers were running")
	}
	if len(seen) != 40 {
		t.Fatalf("claimed %d of 40", len(seen))
	}
}

// ClaimN spreads as Claim does: alone, a worker filling several slots
// takes the oldest tasks in order; with a rival running tasks, the slots
// it fills come from the window of the oldest (n times twice the workers
// seen), oldest first, and not always from its head.
func TestClaimNSpreadsWithRivals(t *testing.T) {
	ctx := context.Background()
	ids := func(ts []*queue.Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	offHead := 0
	for w := range 8 {
		q := claimQueue(t, 40)
		solo, err := q.ClaimN(ctx, "solo", map[string]bool{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(solo), []string{"t00", "t01", "t02"}; !slices.Equal(got, want) {
			t.Fatalf("alone: claimed %v, want %v", got, want)
		}
		// "solo" now runs tasks: two workers seen, a window of 3 * 4 = 12
		// of the queued t03..t39.
		got, err := q.ClaimN(ctx, fmt.Sprintf("w%d", w), map[string]bool{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		names := ids(got)
		if len(names) != 3 || !slices.IsSorted(names) {
			t.Fatalf("with a rival: claimed %v, want 3, oldest first", names)
		}
		for _, id := range names {
			if id < "t03" || id > "t14" {
				t.Fatalf("with a rival: claimed %s, outside the window t03..t14 (%v)", id, names)
			}
		}
		if !slices.Equal(names, []string{"t03", "t04", "t05"}) {
			offHead++
		}
	}
	if offHead == 0 {
		t.Fatal("with a rival, every worker claimed the head of the queue: no spread")
	}
}
