package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/queuetest"
	"github.com/art-runtime/art/lib/queue/stateindex"
	"github.com/art-runtime/art/lib/web"
)

// benchHome is a state home whose queue "big" holds n queued tasks with a
// state index (as a large enqueue or compact leaves it).
func benchHome(b *testing.B, n int) string {
	home := b.TempDir()
	dir := filepath.Join(home, "queues", "big")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	fb, err := file.Open(dir, file.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fb.Close()
	ps := make([]queue.Proposal, n)
	for i := range ps {
		ps[i] = queuetest.Enq(fmt.Sprintf("task-%07d", i))
	}
	queuetest.MustAppend(b, fb, ps...)
	if err := stateindex.WriteQueue(context.Background(), queue.New(fb)); err != nil {
		b.Fatal(err)
	}
	return home
}

// BenchmarkTaskList200k is the server time of task-list requests over a
// queue of 200,000 tasks: the handler's whole work (open the queue, load
// and check the state index, decode the page's rows, render), without the
// network. B/op is what one request allocates.
func BenchmarkTaskList200k(b *testing.B) {
	home := benchHome(b, 200_000)
	h := web.New(web.Config{Listen: "127.0.0.1:8780", Loopback: true, Home: home, Backend: "file"}).Handler()
	for _, c := range []struct{ name, path string }{
		{"html-first-page", "/queues/big/tasks"},
		{"api-first-page", "/api/queues/big/tasks"},
		{"html-state-queued", "/queues/big/tasks?state=queued"},
		{"html-page-100", "/queues/big/tasks?page=100"},
		{"html-last-page", "/queues/big/tasks?page=3999"},
		{"html-search-no-match", "/queues/big/tasks?q=nothing"},
		{"summary", "/api/queues/big"},
		{"html-queue-page-chart", "/queues/big"},
		{"html-task-page", "/queues/big/tasks/task-0100000"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("GET", "http://127.0.0.1:8780"+c.path, nil)
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body)
				}
			}
		})
	}
}
