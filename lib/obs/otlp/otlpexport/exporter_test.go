package otlpexport

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
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

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
	spans   []*tracepb.Span
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
	if r.URL.Path == "/v1/traces" {
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

// envelopes seals n drafts (redacted by the emitter, as in the tool) into
// a stream of log frames.
func envelopes(t testing.TB, n int) (stream []byte, ids []string) {
	t.Helper()
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	stream = []byte(otlpwire.Magic)
	for i := range n {
		d := em.Emit(context.Background(), draft(i))
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		ids = append(ids, d.Envelope.ID())
		b, _ := d.Envelope.MarshalJSON()
		stream = otlpwire.AppendFrame(stream, otlpwire.KindLog, b)
	}
	em.Close()
	return stream, ids
}

func open(t testing.TB, hostport string, warn func(error)) *Exporter {
	t.Helper()
	e, err := Open(hostport, "otlphttp://"+hostport, Options{Service: "test", Warn: warn, Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func draft(i int) obs.Draft {
	return obs.Draft{TypeMeta: jsonx.Meta(obs.KindDraft), Subject: "queue/q/task/t", Type: "task.finished",
		Attrs: map[string]any{"status": "failed", "i": i, "output": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY token ghp_0123456789abcdefghijABCDEFGHIJ012345"}}
}

// Serve turns a stream into OTLP: every envelope one log record (body the
// envelope, attributes its header, severity from the event, the secrets as
// the tool redacted them), every span record one span with its ids,
// parent, times, status and attributes; the status stream ends "done".
func TestServe(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	stream, ids := envelopes(t, 10)
	sp := otlpwire.Span{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Parent: [8]byte{3}, RemoteParent: true, Sampled: true,
		Name: "artq.run", Kind: 1, Start: 1e18, End: 1e18 + 5e6, StatusCode: 1, StatusText: "failed",
		Attrs: []otlpwire.Attr{{Key: "process.exit.code", Type: otlpwire.AttrInt, Int: 3}}}
	stream = otlpwire.AppendFrame(stream, otlpwire.KindSpan, otlpwire.AppendSpan(nil, &sp))
	var status strings.Builder
	e := open(t, strings.TrimPrefix(srv.URL, "http://"), nil)
	if err := Serve(strings.NewReader(string(stream)), &status, e); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(status.String(), "done 10 1\n") {
		t.Errorf("status %q; want it to end with done 10 1", status.String())
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
	if len(c.spans) != 1 {
		t.Fatalf("collector got %d spans; want 1", len(c.spans))
	}
	got := c.spans[0]
	if got.Name != "artq.run" || got.TraceId[0] != 1 || got.SpanId[0] != 2 || got.ParentSpanId[0] != 3 ||
		got.EndTimeUnixNano-got.StartTimeUnixNano != 5e6 || got.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR ||
		got.Status.GetMessage() != "failed" || len(got.Attributes) != 1 || got.Attributes[0].Value.GetIntValue() != 3 {
		t.Errorf("span %v; want the record sent", got)
	}
}

// A malformed frame ends the stream with an error after the final counts;
// a log record that is not an envelope is dropped with one warning.
func TestServeBadInput(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	stream, _ := envelopes(t, 2)
	stream = otlpwire.AppendFrame(stream, otlpwire.KindLog, []byte(`{"not":"an envelope"}`))
	stream = append(stream, 'X')
	var status strings.Builder
	e := open(t, strings.TrimPrefix(srv.URL, "http://"), nil)
	err := Serve(strings.NewReader(string(stream)), &status, e)
	if !errors.Is(err, otlpwire.ErrFrame) {
		t.Errorf("Serve: %v; want ErrFrame", err)
	}
	if !strings.Contains(status.String(), "warn events otlphttp://") || !strings.HasSuffix(status.String(), "done 2 0\n") {
		t.Errorf("status %q; want one warning and done 2 0", status.String())
	}
	if l, _ := e.Dropped(); l != 1 {
		t.Errorf("dropped %d; want the 1 bad record", l)
	}
}

// A collector that is down: the records are counted dropped, one warning.
func TestCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stream, _ := envelopes(t, 300)
	var status strings.Builder
	e := open(t, addr, nil)
	if err := Serve(strings.NewReader(string(stream)), &status, e); err != nil {
		t.Fatal(err)
	}
	if l, _ := e.Dropped(); l != 300 {
		t.Errorf("dropped %d; want 300", l)
	}
	if n := strings.Count(status.String(), "warn "); n != 1 || !strings.HasSuffix(status.String(), "done 0 0\n") {
		t.Errorf("status %q; want one warning and done 0 0", status.String())
	}
}

// A collector that refuses (503): what it refused is counted, what it
// took is not, and the two add up to what was sent.
func TestCountsAddUp(t *testing.T) {
	c := &collector{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(c)
	defer srv.Close()
	e := open(t, strings.TrimPrefix(srv.URL, "http://"), func(error) {})
	stream, _ := envelopes(t, 100)
	r := otlpwire.NewReader(strings.NewReader(string(stream)))
	for i := 0; ; i++ {
		_, p, err := r.Next()
		if err != nil {
			break
		}
		if i == 50 {
			e.logs.flushNow()
			c.mu.Lock()
			c.status = 0
			c.mu.Unlock()
		}
		env, err := ReadEnvelope(p)
		if err != nil {
			t.Fatal(err)
		}
		e.Log(&env)
	}
	e.Close()
	l, _ := e.Dropped()
	x, _ := e.Exported()
	c.mu.Lock()
	got := int64(len(c.records))
	c.mu.Unlock()
	if l+x != 100 || x != got || l < 50 {
		t.Errorf("dropped %d + exported %d (collector has %d); want 100 in all, at least the 50 refused dropped", l, x, got)
	}
}

// ReadEnvelope reads what the emitter sealed, and refuses what a record
// cannot be made of, naming the member.
func TestReadEnvelope(t *testing.T) {
	stream, ids := envelopes(t, 1)
	_, p, err := otlpwire.NewReader(strings.NewReader(string(stream))).Next()
	if err != nil {
		t.Fatal(err)
	}
	env, err := ReadEnvelope(p)
	if err != nil || env.ID != ids[0] || env.Subject != "queue/q/task/t" || env.Type != "task.finished" || env.Seq != 1 || env.Time.IsZero() || env.Body != string(p) || !strings.Contains(string(env.Attrs), `"status":"failed"`) {
		t.Fatalf("ReadEnvelope = %+v, %v", env, err)
	}
	for in, want := range map[string]string{
		`[]`:        "not a JSON object",
		`{"id":"x"`: "not a JSON object",
		`{"subject":"s","type":"t","seq":1,"time":"2026-01-01T00:00:00Z"}`:                     "id",
		`{"id":"x","subject":"s","type":"t","seq":-1,"time":"2026-01-01T00:00:00Z"}`:           "seq",
		`{"id":"x","subject":"s","type":"t","seq":1.5,"time":"2026-01-01T00:00:00Z"}`:          "seq",
		`{"id":"x","subject":"s","type":"t","seq":1,"time":"yesterday"}`:                       "time",
		`{"id":"x","subject":"s","type":"t","seq":1,"time":"2026-01-01T00:00:00Z","attrs":[]}`: "attrs",
	} {
		if _, err := ReadEnvelope([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadEnvelope(%s): %v; want an error naming %s", in, err, want)
		}
	}
}

// FuzzReadEnvelope: any payload is read without panic; one that is read
// has the members a record needs.
func FuzzReadEnvelope(f *testing.F) {
	stream, _ := envelopes(f, 1)
	_, p, _ := otlpwire.NewReader(strings.NewReader(string(stream))).Next()
	f.Add(p)
	f.Add([]byte(`{"id":"x","subject":"s","type":"t","seq":1,"time":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := ReadEnvelope(b)
		if err != nil {
			return
		}
		if env.ID == "" || env.Subject == "" || env.Type == "" || env.Seq < 0 || env.Body != string(b) {
			t.Fatalf("ReadEnvelope(%q) = %+v", b, env)
		}
		Severity(env.Type, env.Attrs)
		traceOf(readAttrs(env.Attrs).traceparent.Str)
	})
}
