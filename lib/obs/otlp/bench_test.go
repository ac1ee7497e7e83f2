package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/obs"
)

// BenchmarkEmit is one event through the emitter into the OTLP sink and on
// to a collector that reads and discards (the export goroutine's cost is
// in the figure, on the other core).
//
//	go test -run '^$' -bench Emit ./lib/obs/otlp/
func BenchmarkEmit(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	r := &Remote{Options: Options{Service: "bench"}}
	em, err := obs.Open([]string{Scheme + strings.TrimPrefix(srv.URL, "http://")}, obs.Options{Remote: r.Open})
	if err != nil {
		b.Fatal(err)
	}
	defer em.Close()
	d := draft(1)
	b.ReportAllocs()
	for b.Loop() {
		em.Emit(context.Background(), d)
	}
}

// BenchmarkEmitMemory is the same event into a memory sink: the emitter's
// own cost (redaction, sealing), for comparison.
func BenchmarkEmitMemory(b *testing.B) {
	em := obs.New(obs.Options{}, obs.NewMemory())
	defer em.Close()
	d := draft(1)
	b.ReportAllocs()
	for b.Loop() {
		em.Emit(context.Background(), d)
	}
}
