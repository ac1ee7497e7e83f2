package otlp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
		ok         bool
	}{
		{"otlphttp://127.0.0.1:4318", "127.0.0.1:4318", true},
		{"otlphttp://localhost:1", "localhost:1", true},
		{"otlphttp://[::1]:4318", "[::1]:4318", true},
		{"otlphttp://127.0.0.1", "", false},
		{"otlphttp://127.0.0.1:0", "", false},
		{"otlphttp://127.0.0.1:65536", "", false},
		{"otlphttp://127.0.0.1:04318", "", false},
		{"otlphttp://:4318", "", false},
		{"otlphttp://h:4318/v1/logs", "", false},
		{"otlphttp://u:p@h:4318", "", false},
		{"otlp://h:4318", "", false},
		{"http://h:4318", "", false},
	} {
		got, err := ParseTarget(tc.spec)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q (ok %v)", tc.spec, got, err, tc.want, tc.ok)
		}
		if err != nil && (exitcode.Of(err) != exitcode.Usage || !errors.Is(err, ErrTarget)) {
			t.Errorf("ParseTarget(%q): %v; want a usage error wrapping ErrTarget", tc.spec, err)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	f.Add("otlphttp://127.0.0.1:4318")
	f.Add("otlphttp://[::1]:1")
	f.Fuzz(func(t *testing.T, spec string) {
		hp, err := ParseTarget(spec)
		if err != nil {
			return
		}
		if Scheme+hp != spec || strings.ContainsAny(hp, "/@?# ") {
			t.Fatalf("ParseTarget(%q) = %q: accepted more than HOST:PORT", spec, hp)
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			t.Fatalf("ParseTarget(%q) = %q: not HOST:PORT: %v", spec, hp, err)
		}
	})
}

func TestSeverity(t *testing.T) {
	for _, tc := range []struct{ typ, attrs, want string }{
		{"queue.enqueued", `{}`, "INFO"},
		{"queue.failed", `{}`, "WARN"},
		{"task.finished", `{"status":"succeeded"}`, "INFO"},
		{"task.finished", `{"status":"failed"}`, "WARN"},
		{"agent.rejected", `{"refusal":"path"}`, "WARN"},
		{"agent.result", `{"status":"finished"}`, "INFO"},
		{"agent.result", `{"status":"provider_error","error":"boom"}`, "ERROR"},
		{"x", `not json`, "INFO"},
	} {
		if _, got := Severity(tc.typ, []byte(tc.attrs)); got != tc.want {
			t.Errorf("Severity(%s, %s) = %s; want %s", tc.typ, tc.attrs, got, tc.want)
		}
	}
}

// collector is an OTLP/HTTP logs endpoint that decodes what it gets.
type collector struct {
	mu      sync.Mutex
	records []*logspb.LogRecord
	raw     []byte
	status  int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != 0 {
		w.WriteHeader(c.status)
		return
	}
	if r.URL.Path == "/v1/logs" {
		var req collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		c.raw = append(c.raw, b...)
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				c.records = append(c.records, sl.LogRecords...)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func emitter(t *testing.T, spec string, warn func(error)) (*obs.Emitter, *Remote) {
	t.Helper()
	r := &Remote{Options: Options{Service: "test", Warn: warn, Buffer: 64}}
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

// Every envelope arrives as one record: body the envelope, attributes its
// header, severity from the event, and the secrets already redacted.
func TestSinkRecords(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	em, r := emitter(t, Scheme+strings.TrimPrefix(srv.URL, "http://"), func(err error) { t.Errorf("warned: %v", err) })
	var ids []string
	for i := range 10 {
		d := em.Emit(context.Background(), draft(i))
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		ids = append(ids, d.Envelope.ID())
	}
	em.Close()
	if l, s := r.Exporter.Dropped(); l != 0 || s != 0 {
		t.Errorf("dropped %d logs, %d spans; want none", l, s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.records) != 10 {
		t.Fatalf("collector got %d records; want 10", len(c.records))
	}
	for i, rec := range c.records {
		attrs := map[string]string{}
		for _, kv := range rec.Attributes {
			attrs[kv.Key] = kv.Value.String()
		}
		if !strings.Contains(attrs["art.id"], ids[i]) || !strings.Contains(attrs["art.subject"], "queue/q/task/t") || !strings.Contains(attrs["art.sequence"], "int_value:") {
			t.Errorf("record %d attributes %v; want id %s, subject and sequence", i, attrs, ids[i])
		}
		if !strings.Contains(rec.Body.GetStringValue(), `"id":"`+ids[i]+`"`) {
			t.Errorf("record %d body %q; want the envelope %s", i, rec.Body.GetStringValue(), ids[i])
		}
		if rec.SeverityText != "WARN" || rec.EventName != "task.finished" {
			t.Errorf("record %d severity %q event %q; want WARN task.finished", i, rec.SeverityText, rec.EventName)
		}
	}
	for _, secret := range []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdefghijABCDEFGHIJ"} {
		if strings.Contains(string(c.raw), secret) {
			t.Errorf("the collector received %q", secret)
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
	var mu sync.Mutex
	var warns []string
	em, r := emitter(t, Scheme+addr, func(err error) { mu.Lock(); warns = append(warns, err.Error()); mu.Unlock() })
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
	mu.Lock()
	defer mu.Unlock()
	if len(warns) == 0 || len(warns) > 2 || !strings.Contains(warns[len(warns)-1], "300 log records and 0 spans dropped") {
		t.Errorf("warnings %q; want at most one failure and the final count of 300", warns)
	}
}

// A collector that refuses (503): what it refused is counted, what it
// took is not, and the two add up to what was sent.
func TestCountsAddUp(t *testing.T) {
	c := &collector{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(c)
	defer srv.Close()
	em, r := emitter(t, Scheme+strings.TrimPrefix(srv.URL, "http://"), func(error) {})
	for i := range 50 {
		em.Emit(context.Background(), draft(i))
	}
	r.Exporter.logs.flushNow()
	c.mu.Lock()
	c.status = 0
	c.mu.Unlock()
	for i := range 50 {
		em.Emit(context.Background(), draft(50+i))
	}
	em.Close()
	l, _ := r.Exporter.Dropped()
	x, _ := r.Exporter.Exported()
	c.mu.Lock()
	got := int64(len(c.records))
	c.mu.Unlock()
	if l+x != 100 || x != got || l < 50 {
		t.Errorf("dropped %d + exported %d (collector has %d); want 100 in all, at least the 50 refused dropped", l, x, got)
	}
}
