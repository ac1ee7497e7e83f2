package stateindex

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/art-runtime/art/lib/queue"
)

// FuzzDecodeRow: any bytes decode to a row or an error, never a panic, and
// a row that decodes encodes back to bytes that decode to the same row.
func FuzzDecodeRow(f *testing.F) {
	g := newGen(f, 1)
	defer g.close()
	for range 4 {
		g.enqueue()
	}
	for range 30 {
		g.step()
	}
	st := replayed(f, g.dir)
	var seeds [][]byte
	for _, tk := range snapshotTasks(st) {
		b, err := appendRow(nil, tk, "make")
		if err == nil {
			sealRow(b, 7)
			seeds = append(seeds, b)
		}
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRow(b, 7)
		if err != nil {
			return
		}
		again, err := appendRow(nil, &r.task, r.program)
		if err != nil {
			return // decodable but not what a writer writes (e.g. a zone)
		}
		sealRow(again, 7)
		r2, err := decodeRow(again, 7)
		if err != nil {
			t.Fatalf("re-encoded row does not decode: %v", err)
		}
		if !sameTask(&r.task, &r2.task) || r.program != r2.program || !reflect.DeepEqual(r.task.Trace == nil, r2.task.Trace == nil) {
			t.Fatalf("round trip changed the row:\n%+v\n%+v", r.task, r2.task)
		}
	})
}

// FuzzIndexFile: whatever bytes lie in state.index, Load refuses them or
// what status would print from them is what the replay prints.
func FuzzIndexFile(f *testing.F) {
	g := newGen(f, 2)
	defer g.close()
	for range 4 {
		g.enqueue()
	}
	for range 20 {
		g.step()
	}
	g.writeIndex()
	for range 5 {
		g.step()
	}
	data, err := os.ReadFile(filepath.Join(g.dir, FileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:headerSize])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		putIndex(t, g.dir, b)
		compareAs(t, g.dir, either, "fuzzed index")
	})
}

func snapshotTasks(st *queue.State) []*queue.Task {
	var out []*queue.Task
	st.Tasks(func(t *queue.Task) bool { out = append(out, t); return true })
	return out
}
