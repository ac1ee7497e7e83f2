package otlp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/vocab"
)

// Sink returns the obs.Sink that sends every envelope as a log record:
// the body is the envelope itself (its canonical JSON, so the record's id
// can be checked against it), the attributes its subject, sequence, type
// and id (and correlation and causation when set), the severity read from
// the event. Append only queues: Appended means "handed to the exporter",
// and what the collector never got is counted at Close. Closing the sink
// closes the exporter.
func (e *Exporter) Sink() obs.Sink { return sink{e} }

type sink struct{ e *Exporter }

func (s sink) Name() string { return s.e.target }

func (s sink) Append(_ context.Context, env *obs.Envelope) (obs.Outcome, error) {
	var r otellog.Record
	r.SetTimestamp(env.Time())
	r.SetEventName(env.Type())
	b, _ := env.MarshalJSON()
	r.SetBody(attribute.StringValue(string(b)))
	sev, text := Severity(env.Type(), env.Attrs())
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	r.AddAttributes(
		attribute.String("art.subject", env.Subject()),
		attribute.Int64("art.sequence", int64(env.Seq())),
		attribute.String("art.type", env.Type()),
		attribute.String("art.id", env.ID()),
	)
	if c := env.Correlation(); c != "" {
		r.AddAttributes(attribute.String("art.correlation", c))
	}
	if c := env.Causation(); c != "" {
		r.AddAttributes(attribute.String("art.causation", c))
	}
	// Background: a record is never a child of the caller's cancellation.
	// An event that names its run's trace (task.started's traceparent)
	// carries that trace and span, so a backend links the two.
	s.e.logger.Emit(traceOf(env.Attrs()), r)
	return obs.Appended, nil
}

func (s sink) Close() error { return s.e.Close() }

// traceOf is a context holding the span an event's "traceparent" names.
func traceOf(attrs json.RawMessage) context.Context {
	ctx := context.Background()
	tp := gjson.GetBytes(attrs, "traceparent").Str
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

// Severity is an event's log severity: ERROR when it carries an error,
// WARN when its type or status says the work did not succeed (failed,
// rejected, cancelled, timed out, refused), else INFO.
func Severity(typ string, attrs json.RawMessage) (otellog.Severity, string) {
	// Three top-level members of canonical JSON: gjson reads them without
	// decoding the rest (the records of a busy worker are many).
	a := gjson.GetManyBytes(attrs, "status", "error", "refusal")
	status, errText, refusal := a[0], a[1], a[2]
	switch {
	case errText.Type == gjson.String && errText.Str != "":
		return otellog.SeverityError, "ERROR"
	case refusal.Type == gjson.String && refusal.Str != "" || unsuccessful(typ[strings.LastIndexByte(typ, '.')+1:]) || status.Type == gjson.String && unsuccessful(status.Str):
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
