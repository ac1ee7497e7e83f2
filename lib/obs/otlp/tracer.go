package otlp

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

// Tracer returns a tracer whose finished spans go to the exporter. It
// implements the OpenTelemetry trace API (lib/queue/queuetrace and
// lib/agent/agenttrace use nothing else) without the SDK: it makes W3C
// trace and span ids, follows the parent in the context (a remote
// TRACEPARENT included: its trace continues, an unsampled one is not
// recorded, like the SDK's parent-based sampler), and at End hands the
// span to the exporter process, which builds the OTLP span. Span events
// and links are not recorded: art's spans carry attributes and status only.
func (e *Exporter) Tracer() trace.Tracer { return tracer{e: e} }

type tracer struct {
	embedded.Tracer
	e *Exporter
}

type provider struct {
	embedded.TracerProvider
	e *Exporter
}

func (p provider) Tracer(string, ...trace.TracerOption) trace.Tracer { return tracer{e: p.e} }

// Start implements trace.Tracer.
func (t tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	var parent trace.SpanContext
	if !cfg.NewRoot() {
		parent = trace.SpanContextFromContext(ctx)
	}
	tid := parent.TraceID()
	if !parent.IsValid() {
		tid = newTraceID()
	}
	sid := newSpanID()
	sampled := !parent.IsValid() || parent.IsSampled()
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	s := &span{e: t.e, recording: sampled}
	s.sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: parent.TraceState()})
	if sampled {
		kind := cfg.SpanKind()
		if kind == trace.SpanKindUnspecified {
			kind = trace.SpanKindInternal
		}
		start := cfg.Timestamp()
		if start.IsZero() {
			start = time.Now()
		}
		s.rec = otlpwire.Span{TraceID: tid, SpanID: sid, Sampled: true, TraceState: parent.TraceState().String(),
			Name: name, Kind: int(kind), Start: start.UnixNano()}
		if parent.IsValid() {
			s.rec.Parent, s.rec.RemoteParent = parent.SpanID(), parent.IsRemote()
		}
		s.setAttributes(cfg.Attributes())
	}
	return trace.ContextWithSpan(ctx, s), s
}

func newTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		hi, lo := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(hi>>(8*i)), byte(lo>>(8*i))
		}
	}
	return id
}

func newSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		v := rand.Uint64()
		for i := range 8 {
			id[i] = byte(v >> (8 * i))
		}
	}
	return id
}

// span is a span being recorded; End hands it to the exporter.
type span struct {
	embedded.Span
	e         *Exporter
	sc        trace.SpanContext
	recording bool

	mu    sync.Mutex
	ended bool
	rec   otlpwire.Span
}

func (s *span) SpanContext() trace.SpanContext { return s.sc }

func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recording && !s.ended
}

// End implements trace.Span: the first End hands the span over.
func (s *span) End(opts ...trace.SpanEndOption) {
	s.mu.Lock()
	if !s.recording || s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	cfg := trace.NewSpanEndConfig(opts...)
	end := cfg.Timestamp()
	if end.IsZero() {
		end = time.Now()
	}
	s.rec.End = max(end.UnixNano(), s.rec.Start)
	s.mu.Unlock()
	s.e.put(record{span: s}, &s.e.sentSpans)
}

// SetStatus implements trace.Span as the SDK does: Ok is final, Unset
// changes nothing, a description is kept for Error only.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording || s.ended || code == codes.Unset || s.rec.StatusCode == int(codes.Ok) {
		return
	}
	if code != codes.Error {
		description = ""
	}
	s.rec.StatusCode, s.rec.StatusText = int(code), description
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recording && !s.ended {
		s.rec.Name = name
	}
}

// SetAttributes implements trace.Span: a key set again keeps its last value.
func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recording && !s.ended {
		s.setAttributes(kv)
	}
}

func (s *span) setAttributes(kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		a := otlpwire.Attr{Key: string(kv.Key)}
		switch kv.Value.Type() {
		case attribute.BOOL:
			a.Type, a.Bool = otlpwire.AttrBool, kv.Value.AsBool()
		case attribute.INT64:
			a.Type, a.Int = otlpwire.AttrInt, kv.Value.AsInt64()
		case attribute.FLOAT64:
			a.Type, a.Float = otlpwire.AttrFloat, kv.Value.AsFloat64()
		default:
			a.Type, a.Str = otlpwire.AttrString, kv.Value.String()
		}
		replaced := false
		for i := range s.rec.Attrs {
			if s.rec.Attrs[i].Key == a.Key {
				s.rec.Attrs[i], replaced = a, true
				break
			}
		}
		if !replaced {
			s.rec.Attrs = append(s.rec.Attrs, a)
		}
	}
}

// Span events, links and errors are not recorded (see Tracer).
func (s *span) AddEvent(string, ...trace.EventOption)   {}
func (s *span) AddLink(trace.Link)                      {}
func (s *span) RecordError(error, ...trace.EventOption) {}
func (s *span) TracerProvider() trace.TracerProvider    { return provider{e: s.e} }

var _ trace.Span = (*span)(nil)
