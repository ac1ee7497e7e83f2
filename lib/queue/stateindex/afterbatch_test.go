package stateindex

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// batch enqueues n new tasks through a queue of its own, as `artq
// enqueue --batch` does: with generated ids, or (ids) with ids of the
// caller's choosing, then also about n/10 requests that repeat an id of
// this batch and, after the first batch, n/10 of an earlier one (already
// enqueued: the same program). It returns the queue and what it did.
func (g *gen) batch(n int, ids bool) (*queue.Queue, *queue.BatchResult) {
	g.t.Helper()
	progs := []string{"make", "true", "ünïcode ☃", `a"b\c`}
	prog := func(k int) string { return progs[k%len(progs)] }
	var b queue.Batch
	add := func(id string, k int) {
		if err := b.Add(queue.EnqueueRequest{ID: id, Task: &execx.Task{Program: prog(k)}, MaxAttempts: 1}); err != nil {
			g.t.Fatalf("request %s: %v", id, err)
		}
	}
	earlier := g.ids
	for range n {
		k := g.rnd.IntN(len(progs))
		if !ids {
			add("", k)
			continue
		}
		k = g.ids
		g.ids++
		add(fmt.Sprintf("b%05d", k), k)
		switch r := g.rnd.IntN(10); {
		case r == 0 && g.ids > earlier+1: // again within this batch
			k = earlier + g.rnd.IntN(g.ids-earlier)
			add(fmt.Sprintf("b%05d", k), k)
		case r == 1 && earlier > 0: // already in the queue
			k = g.rnd.IntN(earlier)
			add(fmt.Sprintf("b%05d", k), k)
		}
	}
	q := queue.New(g.b)
	res, err := q.EnqueueBatch(bg, &b)
	if err != nil {
		g.t.Fatal(err)
	}
	if res.Created != n {
		g.t.Fatalf("the batch created %d tasks of %d requests; want %d", res.Created, res.Requests, n)
	}
	return q, res
}

// indexBytes reads dir's index.
func indexBytes(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAsReplay checks that dir's index is, byte for byte, the one a
// replay of the whole log builds, and that status from it matches.
func sameAsReplay(t *testing.T, dir, when string) {
	t.Helper()
	got := indexBytes(t, dir)
	if err := Write(dir, replayed(t, dir)); err != nil {
		t.Fatal(err)
	}
	if want := indexBytes(t, dir); !bytes.Equal(got, want) {
		t.Fatalf("%s: the index written after the batch (%d bytes) is not the one a replay builds (%d bytes)", when, len(got), len(want))
	}
	compare(t, dir, true, when)
}

// TestAfterBatchMatchesReplay: the index an enqueue writes after a batch,
// from what it holds and without a replay, is byte for byte the index a
// replay of the log builds: for a new queue, a queue with earlier tasks
// and an index, a compacted queue, batches with ids given twice or
// already in the queue; and where what the process holds does not reach
// the batch (another writer appended after the index, a torn tail was
// cut), it refreshes as before, with the same result.
func TestAfterBatchMatchesReplay(t *testing.T) {
	n := BatchMin + 37
	cases := []struct {
		name  string
		setup func(g *gen) // the queue before the batch
		ids   bool
		want  string
	}{
		{"new queue", func(g *gen) {}, false, viaBatch},
		{"new queue, ids", func(g *gen) {}, true, viaState},
		{"earlier tasks and their index", func(g *gen) {
			g.history(30)
			g.writeIndex()
		}, false, viaIndex},
		{"after an earlier batch", func(g *gen) {
			g.history(10)
			_, res := g.batch(n, false)
			mustAfter(g, queue.New(g.b), res, viaRefresh)
		}, false, viaIndex},
		{"compacted, then indexed", func(g *gen) {
			g.history(30)
			g.compact()
			g.writeIndex()
		}, false, viaIndex},
		{"indexed, then compacted", func(g *gen) {
			g.history(30)
			g.writeIndex()
			g.compact()
		}, false, viaRefresh},
		{"another writer after the index", func(g *gen) {
			g.history(30)
			g.writeIndex()
			g.step()
			g.enqueue()
		}, false, viaRefresh},
		{"no index", func(g *gen) { g.history(30) }, false, viaRefresh},
		{"damaged index", func(g *gen) {
			g.history(30)
			g.writeIndex()
			putIndex(t, g.dir, []byte("junk"))
		}, false, viaRefresh},
		{"torn tail cut by the batch", func(g *gen) {
			g.history(30)
			g.writeIndex()
			g.tear()
			g.close()
			b, err := file.Open(g.dir, file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g.b = b // the batch's commit cuts the tail and records it first
		}, false, viaRefresh},
		{"ids, earlier tasks", func(g *gen) {
			g.history(30)
			g.batch(n, true)
			g.writeIndex()
		}, true, viaState},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGen(t, uint64(100+i))
			defer func() { g.close() }()
			c.setup(g)
			q, res := g.batch(n, c.ids)
			if c.ids && res.Created == res.Requests {
				t.Fatalf("a batch with ids created all %d tasks: no duplicate tried", res.Created)
			}
			mustAfter(g, q, res, c.want)
			sameAsReplay(t, g.dir, c.name)
			if c.ids {
				// The same result from a process that holds only the
				// batch (not the queue's state): from the index
				// before the batch, or the batch alone.
				g2 := newGen(t, uint64(100+i))
				defer g2.close()
				c.setup(g2)
				_, res2 := g2.batch(n, true)
				want := viaIndex
				if res2.FirstSeq == 1 {
					want = viaBatch // the log's first events
				}
				mustAfter(g2, queue.New(g2.b), res2, want)
				sameAsReplay(t, g2.dir, c.name+", from the batch")
			}
		})
	}
}

// TestAfterBatchOtherWriterAfter: another writer appending after the
// batch, before the index is written, leaves an index at the batch that
// status completes with the tail.
func TestAfterBatchOtherWriterAfter(t *testing.T) {
	g := newGen(t, 7)
	defer g.close()
	g.history(20)
	g.writeIndex()
	q, res := g.batch(BatchMin, false)
	g.step() // through the gen's own queue: another writer
	g.enqueue()
	mustAfter(g, q, res, viaIndex)
	v, err := Load(bg, g.dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.IndexSeq() != res.LastSeq || v.TailEvents == 0 {
		t.Fatalf("index at %d with %d tail events; want the batch's end %d and a tail", v.IndexSeq(), v.TailEvents, res.LastSeq)
	}
	v.Close()
	compare(t, g.dir, true, "another writer after the batch")
}

// TestAfterBatchSmall: a batch of fewer than BatchMin tasks writes no index.
func TestAfterBatchSmall(t *testing.T) {
	g := newGen(t, 8)
	defer g.close()
	q, res := g.batch(BatchMin-1, false)
	mustAfter(g, q, res, viaNothing)
	if exists(t, g.dir) {
		t.Fatal("a small batch wrote an index")
	}
}

// history drives the queue through k random enqueues and transitions.
func (g *gen) history(k int) {
	for range k {
		if g.rnd.IntN(3) == 0 {
			g.enqueue()
		} else {
			g.step()
		}
	}
}

func mustAfter(g *gen, q *queue.Queue, res *queue.BatchResult, want string) {
	g.t.Helper()
	how, err := afterBatch(bg, q, res)
	if err != nil {
		g.t.Fatal(err)
	}
	if how != want {
		g.t.Fatalf("the index after the batch was written by way of %q; want %q", how, want)
	}
}
