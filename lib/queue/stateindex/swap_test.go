package stateindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rowSpan is where one task's row lies in an index file.
type rowSpan struct {
	lo, hi int
	id     string
}

// rowsOf finds every row of an index file by its offsets, without
// checking anything (the test edits files as an outsider would).
func rowsOf(t *testing.T, data []byte) map[string]rowSpan {
	t.Helper()
	h, err := decodeHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	n := int(h.tasks)
	offs := data[headerSize+n:]
	base := headerSize + int(h.sectionsLen())
	spans := map[string]rowSpan{}
	for i := range n {
		lo := base + int(binary.LittleEndian.Uint32(offs[4*i:]))
		hi := base + int(binary.LittleEndian.Uint32(offs[4*i+4:]))
		id, ok := rowID(data[lo:hi])
		if !ok {
			t.Fatalf("row %d: no id", i)
		}
		spans[id] = rowSpan{lo, hi, id}
	}
	return spans
}

// stateOf is the state byte of a row (after its id).
func stateOf(row []byte) byte {
	n, k := binary.Uvarint(row)
	return row[k+int(n)]
}

// swappedIndex drives a random queue, keeping every index it writes,
// until the current index holds a task whose row in an earlier index is
// as long, in the same state, and differs: that genuine older row put in place of the current
// one (every byte of it as a writer wrote it) is the edit returned.
func swappedIndex(t *testing.T, seed uint64) (*gen, []byte, string) {
	t.Helper()
	g := newGen(t, seed)
	t.Cleanup(g.close)
	var olds [][]byte
	for round := range 200 {
		g.history(3)
		if !g.writeIndex() {
			continue
		}
		cur := indexBytes(t, g.dir)
		now := rowsOf(t, cur)
		for _, old := range olds {
			for id, was := range rowsOf(t, old) {
				is, ok := now[id]
				if !ok || is.hi-is.lo != was.hi-was.lo || bytes.Equal(cur[is.lo:is.hi], old[was.lo:was.hi]) ||
					stateOf(cur[is.lo:is.hi]) != stateOf(old[was.lo:was.hi]) {
					continue
				}
				bad := bytes.Clone(cur)
				copy(bad[is.lo:is.hi], old[was.lo:was.hi])
				return g, bad, fmt.Sprintf("task %s's row from an earlier index (round %d)", id, round)
			}
		}
		olds = append(olds, cur)
	}
	t.Fatal("no task's row kept its length while it changed")
	return nil, nil, ""
}

// TestSwappedOlderRow: a genuine older row of a task, of the same length
// as the current one, put into the index in its place never changes what
// status prints (the row's CRC is seeded with the index's binding and the
// row's number; the digest covers every byte), and no writer copies it
// into the index it writes next: the refresh of a worker (and its exit
// write) and an enqueue --batch of BatchMin tasks without ids rebuild
// from a replay instead.
func TestSwappedOlderRow(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g, bad, what := swappedIndex(t, 100+seed)
			putIndex(t, g.dir, bad)
			compareAs(t, g.dir, either, what)
			if _, err := Check(bg, g.dir, replayed(t, g.dir)); err != nil {
				t.Fatalf("%s: fsck: %v", what, err)
			}

			// A worker's refresh (the same path as its exit write).
			g.enqueue()
			if err := Refresh(bg, g.b, 1); err != nil {
				t.Fatal(err)
			}
			sameAsReplay(t, g.dir, what+", then a refresh")

			// An id-less batch of BatchMin right after the index.
			putIndex(t, g.dir, bad)
			g.enqueue()
			if err := Refresh(bg, g.b, 1); err != nil {
				t.Fatal(err)
			}
			fresh := indexBytes(t, g.dir)
			spans := rowsOf(t, fresh)
			// Swap one of the fresh index's rows for an older one of the
			// same length again: the one just used is as good as any.
			var edited bool
			for id, is := range rowsOf(t, bad) {
				now, ok := spans[id]
				if ok && now.hi-now.lo == is.hi-is.lo && !bytes.Equal(fresh[now.lo:now.hi], bad[is.lo:is.hi]) {
					copy(fresh[now.lo:now.hi], bad[is.lo:is.hi])
					edited = true
					break
				}
			}
			if !edited {
				t.Skip("the fresh index holds no row to swap")
			}
			putIndex(t, g.dir, fresh)
			q, res := g.batch(BatchMin, false)
			if _, err := afterBatch(bg, q, res); err != nil {
				t.Fatal(err)
			}
			sameAsReplay(t, g.dir, what+", then a batch")
		})
	}
}

// TestSweepWhateverAge: a temporary index file an interrupted writer left
// (state.indexNNN), however recent, is removed by the next index writer,
// which holds the index writers' lock: no other is writing one then.
func TestSweepWhateverAge(t *testing.T) {
	g := newGen(t, 9)
	defer g.close()
	g.history(10)
	left := filepath.Join(g.dir, FileName+"123456")
	if err := os.WriteFile(left, []byte("half an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	os.Chtimes(left, now, now)
	if !g.writeIndex() {
		t.Fatal("no index")
	}
	if _, err := os.Stat(left); err == nil {
		t.Fatalf("%s: still there after the next index write", left)
	}
	entries, _ := os.ReadDir(g.dir)
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), FileName); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			t.Fatalf("%s: a temporary index file is left", e.Name())
		}
	}
}
