package otlpexport

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServe is one envelope through the exporter process's side:
// read from the stream, parsed, made a log record and sent to a collector
// that reads and discards (its own CPU is in the figure).
//
//	go test -run '^$' -bench Serve ./lib/obs/otlp/otlpexport/
func BenchmarkServe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	stream, _ := envelopes(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		e := open(b, strings.TrimPrefix(srv.URL, "http://"), nil)
		Serve(bytes.NewReader(stream), io.Discard, e)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/record")
}
