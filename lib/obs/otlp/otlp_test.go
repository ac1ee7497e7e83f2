package otlp

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/art-runtime/art/internal/otlpcli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
)

// The test binary is also the exporter process (artobs-otlp) when
// envExporter is set: the tests below run the real pipe and process.
const envExporter = "ART_OTLP_TEST_EXPORTER"

func TestMain(m *testing.M) {
	if os.Getenv(envExporter) == "1" {
		os.Exit(otlpcli.Main())
	}
	os.Setenv(envExporter, "1")
	code := m.Run()
	os.Exit(code)
}

func self(string) (string, error) { return os.Executable() }

// collector is an OTLP/HTTP endpoint that decodes what it gets.
type collector struct {
	mu    sync.Mutex
	logs  int
	spans []*tracepb.Span
	raw   []byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, b...)
	switch r.URL.Path {
	case "/v1/logs":
		var req collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				c.logs += len(sl.LogRecords)
			}
		}
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// warnings collects warnings.
type warnings struct {
	mu sync.Mutex
	w  []string
}

func (w *warnings) add(err error) { w.mu.Lock(); w.w = append(w.w, err.Error()); w.mu.Unlock() }
func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.w, "\n")
}

func emitter(t *testing.T, spec string, warn func(error)) (*obs.Emitter, *Remote) {
	t.Helper()
	r := &Remote{Options: Options{Service: "test", Warn: warn, Find: self}}
	em, err := obs.Open([]string{spec}, obs.Options{Remote: r.Open, Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	return em, r
}

func draft(i int) obs.Draft {
	return obs.Draft{TypeMeta: jsonx.Meta(obs.KindDraft), Subject: "queue/q/task/t", Type: "task.finished",
		Attrs: map[string]any{"status": "failed", "i": i, "output": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY token ghp_0123456789abcdefghijABCDEFGHIJ012345"}}
}

var secrets = []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdefghijABCDEFGHIJ"}

// Through the real exporter process: every envelope and span arrives,
// counted exported, nothing dropped, no secret on the wire, and the spans
// form the tree their contexts say. The interrupt that stops the tool's
// process group does not stop the exporter before the stream ends.
func TestExportThroughProcess(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	var w warnings
	em, r := emitter(t, Scheme+strings.TrimPrefix(srv.URL, "http://"), w.add)
	for i := range 20 {
		if i == 10 {
			// Running (it has reported), in a process group of its own
			// (a Ctrl-C at the terminal does not reach it), and deaf to
			// an interrupt sent to it.
			for deadline := time.Now().Add(10 * time.Second); r.Exporter.exportedLogs.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			pid := r.Exporter.cmd.Process.Pid
			if pg, err := syscall.Getpgid(pid); err != nil || pg != pid {
				t.Errorf("exporter pid %d in process group %d (%v); want its own", pid, pg, err)
			}
			r.Exporter.cmd.Process.Signal(syscall.SIGINT)
			r.Exporter.cmd.Process.Signal(syscall.SIGTERM)
		}
		if d := em.Emit(context.Background(), draft(i)); d.Err != nil {
			t.Fatal(d.Err)
		}
	}
	tr := r.Exporter.Tracer()
	ctx, root := tr.Start(context.Background(), "root")
	_, child := tr.Start(ctx, "child")
	child.End()
	root.End()
	em.Close()
	if l, s := r.Exporter.Dropped(); l != 0 || s != 0 || w.all() != "" {
		t.Errorf("dropped %d logs, %d spans, warnings %q; want none", l, s, w.all())
	}
	if l, s := r.Exporter.Exported(); l != 20 || s != 2 {
		t.Errorf("exported %d logs, %d spans; want 20 and 2", l, s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs != 20 || len(c.spans) != 2 {
		t.Fatalf("collector got %d records and %d spans; want 20 and 2", c.logs, len(c.spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		byName[s.Name] = s
	}
	if ch, rt := byName["child"], byName["root"]; ch == nil || rt == nil || string(ch.ParentSpanId) != string(rt.SpanId) || string(ch.TraceId) != string(rt.TraceId) || len(rt.ParentSpanId) != 0 {
		t.Errorf("spans %v; want child under root in one trace", c.spans)
	}
	for _, s := range secrets {
		if strings.Contains(string(c.raw), s) {
			t.Errorf("the collector received %q", s)
		}
	}
}

// A collector that is down: every Emit returns at once, nothing fails,
// and the records are counted dropped, in one warning at the end.
func TestCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var w warnings
	em, r := emitter(t, Scheme+addr, w.add)
	const n = 300
	for i := range n {
		if d := em.Emit(context.Background(), draft(i)); d.Err != nil {
			t.Fatalf("emit %d: %v (a down collector must not fail the emit)", i, d.Err)
		}
	}
	em.Close()
	if l, _ := r.Exporter.Dropped(); l != n {
		t.Errorf("dropped %d; want %d", l, n)
	}
	ws := strings.Split(w.all(), "\n")
	if len(ws) != 2 || !strings.Contains(ws[0], "export failed") || !strings.Contains(ws[1], "300 log records and 0 spans dropped (0 and 0 exported)") {
		t.Errorf("warnings %q; want one failure and the final count of 300", ws)
	}
}

// The exporter program missing: an error naming it, exit 127, with a hint.
func TestExporterMissing(t *testing.T) {
	r := &Remote{Options: Options{Service: "test", Find: func(name string) (string, error) {
		return "", fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}}}
	_, err := r.Open("otlphttp://127.0.0.1:1")
	if exitcode.Of(err) != exitcode.ProgramNotFound || !strings.Contains(err.Error(), ExporterName) {
		t.Fatalf("Open: %v (exit %d); want exit 127 naming %s", err, exitcode.Of(err), ExporterName)
	}
}

// The exporter killed while records flow: appends go on without blocking
// or failing, one warning says it stopped, and at Close everything not
// reported exported is counted dropped.
func TestExporterKilled(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	var w warnings
	em, r := emitter(t, Scheme+strings.TrimPrefix(srv.URL, "http://"), w.add)
	for i := range 50 {
		em.Emit(context.Background(), draft(i))
	}
	r.Exporter.cmd.Process.Kill()
	<-r.Exporter.exited
	start := time.Now()
	for i := range 5000 {
		if d := em.Emit(context.Background(), draft(i)); d.Err != nil {
			t.Fatalf("emit after the kill: %v", d.Err)
		}
	}
	emitting := time.Since(start)
	em.Close()
	l, _ := r.Exporter.Dropped()
	x, _ := r.Exporter.Exported()
	if l+x != 5050 || l < 5000 {
		t.Errorf("dropped %d + exported %d; want 5050 in all, at least the 5000 after the kill dropped", l, x)
	}
	all := w.all()
	if strings.Count(all, "stopped") != 1 || !strings.Contains(all, "artobs-otlp stopped (signal: killed)") ||
		!strings.Contains(all, fmt.Sprintf("%d log records and 0 spans dropped", l)) {
		t.Errorf("warnings %q; want one saying the exporter stopped and the final count", all)
	}
	t.Logf("5000 emits after the kill took %s", emitting)
}

// An exporter that stops reading (SIGSTOP): the pipe fills, appends go on
// without blocking (the buffer drops and counts), and Close kills it after
// its timeout and a second, and counts everything not exported.
func TestExporterStuck(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	var w warnings
	r := &Remote{Options: Options{Service: "test", Warn: w.add, Find: self, Timeout: 300 * time.Millisecond, Buffer: 256}}
	em, err := obs.Open([]string{Scheme + strings.TrimPrefix(srv.URL, "http://")}, obs.Options{Remote: r.Open, Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Exporter.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const n = 3000 // about 1.5 MB of envelopes: far more than a pipe holds
	for i := range n {
		if d := em.Emit(context.Background(), draft(i)); d.Err != nil {
			t.Fatalf("emit %d: %v", i, d.Err)
		}
	}
	start := time.Now()
	em.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %s; want about the timeout and a second", took)
	}
	if l, _ := r.Exporter.Dropped(); l != n {
		t.Errorf("dropped %d; want all %d", l, n)
	}
	all := w.all()
	if !strings.Contains(all, "did not finish within 1.3s: killed") || !strings.Contains(all, fmt.Sprintf("%d log records and 0 spans dropped (0 and 0 exported)", n)) {
		t.Errorf("warnings %q; want the kill and the final count", all)
	}
}
