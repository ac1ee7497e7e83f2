package stateindex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
)

func exists(t *testing.T, dir string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestKeep: a worker's keeper writes the index when it stops, from the
// queue's own state when there is none yet, and leaves no goroutine.
func TestKeep(t *testing.T) {
	g := newGen(t, 12)
	defer g.close()
	for range 3 {
		g.enqueue()
		g.step()
	}
	q, err := queue.Open(bg, g.b)
	if err != nil {
		t.Fatal(err)
	}
	var warned []error
	stop := Keep(bg, q, time.Hour, func(err error) { warned = append(warned, err) })
	stop()
	if len(warned) > 0 || !exists(t, g.dir) {
		t.Fatalf("no index at stop (warnings %v)", warned)
	}
	compare(t, g.dir, true, "after stop")
	g.step()
	g.enqueue()
	stop = Keep(bg, q, time.Millisecond, nil)
	time.Sleep(20 * time.Millisecond) // ticks: the tail is below TailMin
	stop()
	v, err := Load(bg, g.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.TailEvents != 0 {
		t.Fatalf("the final refresh left %d events", v.TailEvents)
	}

	// Other backends have no index: Keep does nothing.
	Keep(bg, queue.New(nil), time.Hour, nil)()
}

// TestLongTail: a tail naming more tasks than manyLookups is applied from
// the rows read whole, with the same result.
func TestLongTail(t *testing.T) {
	g := newGen(t, 14)
	defer g.close()
	for range 40 {
		g.enqueue()
	}
	if !g.writeIndex() {
		t.Fatal("no index")
	}
	for range 150 {
		g.step()
	}
	v, err := Load(bg, g.dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.all == nil {
		t.Fatalf("a tail of %d events did not read the rows whole", v.TailEvents)
	}
	v.Close()
	compare(t, g.dir, true, "long tail")
}
