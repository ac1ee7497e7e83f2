package otlpexport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
	"github.com/art-runtime/art/lib/vocab"
)

// Envelope is what a log record is made of: an envelope's canonical JSON
// (the body, so the record's id can be checked against it) and the header
// members read from it.
type Envelope struct {
	Body                   string
	ID, Subject, Type      string
	Correlation, Causation string
	Seq                    int64
	Time                   time.Time
	Attrs                  []byte
}

// ReadEnvelope reads the header of an envelope the tool sealed and wrote
// to the pipe. It checks what the record needs (a JSON object with an id,
// subject, type, sequence and RFC 3339 time) and does not re-verify the
// id: the tool computed it, and a strict parse (obs.ParseEnvelope) was
// most of this process's CPU. The error names the member.
func ReadEnvelope(b []byte) (Envelope, error) {
	if !gjson.ValidBytes(b) || len(b) == 0 || b[0] != '{' {
		return Envelope{}, errors.New("envelope: not a JSON object")
	}
	// One pass over the top-level members (gjson's GetMany would scan
	// the envelope once a path).
	var m [8]gjson.Result
	gjson.ParseBytes(b).ForEach(func(k, v gjson.Result) bool {
		if i := slices.Index(envelopeMembers, k.Str); i >= 0 {
			m[i] = v
		}
		return true
	})
	for i, name := range []string{"id", "subject", "type"} {
		if m[i].Type != gjson.String || m[i].Str == "" {
			return Envelope{}, fmt.Errorf("envelope: %s: want a non-empty string", name)
		}
	}
	if m[3].Type != gjson.Number || m[3].Int() < 0 || m[3].Raw != strconv.FormatInt(m[3].Int(), 10) {
		return Envelope{}, errors.New("envelope: seq: want a non-negative integer")
	}
	t, err := time.Parse(time.RFC3339Nano, m[4].Str)
	if m[4].Type != gjson.String || err != nil {
		return Envelope{}, errors.New("envelope: time: want an RFC 3339 time")
	}
	if m[7].Exists() && !m[7].IsObject() {
		return Envelope{}, errors.New("envelope: attrs: want an object")
	}
	return Envelope{
		Body: string(b), ID: m[0].Str, Subject: m[1].Str, Type: m[2].Str, Seq: m[3].Int(), Time: t,
		Correlation: m[5].Str, Causation: m[6].Str, Attrs: []byte(m[7].Raw),
	}, nil
}

// envelopeMembers are the members ReadEnvelope reads, in m's order.
var envelopeMembers = []string{"id", "subject", "type", "seq", "time", "correlation", "causation", "attrs"}

// Log queues env as a log record: the body is the envelope itself, the
// attributes its subject, sequence, type and id (and correlation and
// causation when set), the severity read from the event. The tool
// redacted it before it left the tool.
func (e *Exporter) Log(env *Envelope) {
	var r otellog.Record
	r.SetTimestamp(env.Time)
	r.SetEventName(env.Type)
	r.SetBody(attribute.StringValue(env.Body))
	a := readAttrs(env.Attrs)
	sev, text := a.severity(env.Type)
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	r.AddAttributes(
		attribute.String("art.subject", env.Subject),
		attribute.Int64("art.sequence", env.Seq),
		attribute.String("art.type", env.Type),
		attribute.String("art.id", env.ID),
	)
	if env.Correlation != "" {
		r.AddAttributes(attribute.String("art.correlation", env.Correlation))
	}
	if env.Causation != "" {
		r.AddAttributes(attribute.String("art.causation", env.Causation))
	}
	// An event that names its run's trace (task.started's traceparent)
	// carries that trace and span, so a backend links the two.
	e.logger.Emit(traceOf(a.traceparent.Str), r)
}

// Span queues one finished span.
func (e *Exporter) Span(s *otlpwire.Span) {
	flags := trace.TraceFlags(0)
	if s.Sampled {
		flags = trace.FlagsSampled
	}
	ts, _ := trace.ParseTraceState(s.TraceState)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.TraceID, SpanID: s.SpanID, TraceFlags: flags, TraceState: ts})
	var parent trace.SpanContext
	if s.Parent != ([8]byte{}) {
		parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.TraceID, SpanID: s.Parent, TraceFlags: flags, TraceState: ts, Remote: s.RemoteParent})
	}
	attrs := make([]attribute.KeyValue, 0, len(s.Attrs))
	for _, a := range s.Attrs {
		switch a.Type {
		case otlpwire.AttrString:
			attrs = append(attrs, attribute.String(a.Key, a.Str))
		case otlpwire.AttrInt:
			attrs = append(attrs, attribute.Int64(a.Key, a.Int))
		case otlpwire.AttrBool:
			attrs = append(attrs, attribute.Bool(a.Key, a.Bool))
		case otlpwire.AttrFloat:
			attrs = append(attrs, attribute.Float64(a.Key, a.Float))
		}
	}
	e.spans.put(tracetest.SpanStub{
		Name:                 s.Name,
		SpanContext:          sc,
		Parent:               parent,
		SpanKind:             trace.SpanKind(s.Kind),
		StartTime:            time.Unix(0, s.Start),
		EndTime:              time.Unix(0, s.End),
		Attributes:           attrs,
		Status:               sdktrace.Status{Code: codes.Code(s.StatusCode), Description: s.StatusText},
		Resource:             e.res,
		InstrumentationScope: instrumentation.Scope{Name: scope},
	}.Snapshot())
}

// traceOf is a context holding the span a "traceparent" value names.
func traceOf(tp string) context.Context {
	ctx := context.Background()
	if !vocab.ValidTraceparent(tp) {
		return ctx
	}
	tid, err1 := trace.TraceIDFromHex(tp[3:35])
	sid, err2 := trace.SpanIDFromHex(tp[36:52])
	if err1 != nil || err2 != nil {
		return ctx
	}
	flags := trace.TraceFlags(0)
	if tp[53:55] == "01" {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}))
}

// attrHeads are the attrs members a record is made from.
type attrHeads struct{ status, err, refusal, traceparent gjson.Result }

// readAttrs reads them in one pass over the top level of attrs (the
// records of a busy worker are many).
func readAttrs(attrs []byte) (h attrHeads) {
	gjson.ParseBytes(attrs).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "status":
			h.status = v
		case "error":
			h.err = v
		case "refusal":
			h.refusal = v
		case "traceparent":
			h.traceparent = v
		}
		return true
	})
	return h
}

// Severity is an event's log severity: ERROR when it carries an error,
// WARN when its type or status says the work did not succeed (failed,
// rejected, cancelled, timed out, refused), else INFO.
func Severity(typ string, attrs json.RawMessage) (otellog.Severity, string) {
	return readAttrs(attrs).severity(typ)
}

func (h attrHeads) severity(typ string) (otellog.Severity, string) {
	switch {
	case h.err.Type == gjson.String && h.err.Str != "":
		return otellog.SeverityError, "ERROR"
	case h.refusal.Type == gjson.String && h.refusal.Str != "" || unsuccessful(typ[strings.LastIndexByte(typ, '.')+1:]) || h.status.Type == gjson.String && unsuccessful(h.status.Str):
		return otellog.SeverityWarn, "WARN"
	}
	return otellog.SeverityInfo, "INFO"
}

func unsuccessful(word string) bool {
	switch word {
	case "failed", "rejected", "cancelled", "timeout", "timed_out", "refused", "error", "truncated", "interrupted":
		return true
	}
	return false
}
