package otlp

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
	"github.com/art-runtime/art/lib/obs/tracectx"
)

// queued returns the spans handed to e so far (no process: the test reads
// the buffer).
func queued(e *Exporter) []otlpwire.Span {
	var out []otlpwire.Span
	for {
		select {
		case r := <-e.ch:
			out = append(out, r.span.rec)
		default:
			return out
		}
	}
}

func TestTracer(t *testing.T) {
	e := &Exporter{ch: make(chan record, 16)}
	tr := e.Tracer()
	// A remote parent, as artq work or artagent read it from TRACEPARENT.
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	parent := tracectx.FromEnv(context.Background(), func(k string) string {
		if k == tracectx.EnvTraceparent {
			return tp
		}
		return ""
	})
	ctx, a := tr.Start(parent, "attempt", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attribute.String("k", "v1")))
	start := time.Unix(100, 0)
	_, b := tr.Start(ctx, "run", trace.WithTimestamp(start))
	b.SetAttributes(attribute.String("k", "v2"), attribute.Int("n", 3), attribute.Bool("ok", true), attribute.Float64("f", 0.5))
	b.SetStatus(codes.Error, "failed")
	b.End(trace.WithTimestamp(start.Add(time.Second)))
	b.End()
	b.SetAttributes(attribute.String("late", "x"))
	env := map[string]string{}
	tracectx.Inject(ctx, env)
	a.End()
	got := queued(e)
	if len(got) != 2 {
		t.Fatalf("%d spans queued; want 2 (End twice queues once)", len(got))
	}
	run, att := got[0], got[1]
	if att.Parent != [8]byte{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31} || !att.RemoteParent || trace.TraceID(att.TraceID).String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("attempt %+v; want the remote parent's trace and span", att)
	}
	if att.Kind != int(trace.SpanKindConsumer) || run.Kind != int(trace.SpanKindInternal) {
		t.Errorf("kinds %d %d; want consumer and internal", att.Kind, run.Kind)
	}
	if run.Parent != att.SpanID || run.RemoteParent || run.TraceID != att.TraceID {
		t.Errorf("run %+v; want a local child of the attempt", run)
	}
	if run.Start != start.UnixNano() || run.End != start.Add(time.Second).UnixNano() || run.StatusCode != int(codes.Error) || run.StatusText != "failed" {
		t.Errorf("run %+v; want its timestamps and error status", run)
	}
	want := []otlpwire.Attr{{Key: "k", Type: otlpwire.AttrString, Str: "v2"}, {Key: "n", Type: otlpwire.AttrInt, Int: 3},
		{Key: "ok", Type: otlpwire.AttrBool, Bool: true}, {Key: "f", Type: otlpwire.AttrFloat, Float: 0.5}}
	if len(run.Attrs) != len(want) {
		t.Fatalf("run attributes %+v; want %+v", run.Attrs, want)
	}
	for i := range want {
		if run.Attrs[i] != want[i] {
			t.Errorf("run attribute %d %+v; want %+v", i, run.Attrs[i], want[i])
		}
	}
	if env[tracectx.EnvTraceparent] != "00-0af7651916cd43dd8448eb211c80319c-"+trace.SpanID(att.SpanID).String()+"-01" {
		t.Errorf("TRACEPARENT %q; want the attempt's context", env[tracectx.EnvTraceparent])
	}
	// A parent that is not sampled: nothing is recorded, the context
	// still carries the trace.
	unsampled := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: att.TraceID, SpanID: att.SpanID, Remote: true}))
	_, s := tr.Start(unsampled, "x")
	s.End()
	if s.IsRecording() || s.SpanContext().TraceID() != att.TraceID || len(queued(e)) != 0 {
		t.Errorf("unsampled parent: recording %v, trace %s, queued; want nothing recorded in the same trace", s.IsRecording(), s.SpanContext().TraceID())
	}
	// A root: a new, valid trace.
	_, r := tr.Start(context.Background(), "root")
	if !r.SpanContext().IsValid() || !r.SpanContext().IsSampled() || r.SpanContext().TraceID() == att.TraceID {
		t.Errorf("root context %v; want a new sampled trace", r.SpanContext())
	}
}
