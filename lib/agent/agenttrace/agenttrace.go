// Package agenttrace records an agent run as OpenTelemetry spans, from the
// loop's own events (lib/agent's Options.Observe): one span for the run
// (artagent.run) with a child per step (artagent.step), which has a child
// for the provider call (artagent.provider, its latency) and one for what
// was done with the reply (artagent.action, or artagent.verify). Spans carry
// the step number, action, refusal, exit code, verification and token
// counts; never the model's text, commands or observations, which can hold
// secrets (the redacted events carry what may be said about them).
//
// It uses only the OpenTelemetry trace API; the tracer decides where spans
// go (lib/obs/otlp in artagent). The loop is untouched: the spans are
// rebuilt from event times, so tracing adds no work to a step but one
// callback.
package agenttrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
)

// Span names.
const (
	SpanRun      = "artagent.run"
	SpanStep     = "artagent.step"
	SpanProvider = "artagent.provider"
	SpanAction   = "artagent.action"
	SpanVerify   = "artagent.verify"
)

// Run is one agent run's spans. Observe is not safe for concurrent use:
// the loop calls it from one goroutine.
type Run struct {
	tracer trace.Tracer
	ctx    context.Context
	span   trace.Span
	last   time.Time // end of the previous step: the next one starts there

	step, action trace.Span
}

// Start starts the run's span under parent (a remote TRACEPARENT's span,
// or none) with attrs (the provider's name, the run's subject).
func Start(parent context.Context, tracer trace.Tracer, attrs ...attribute.KeyValue) *Run {
	now := time.Now()
	ctx, span := tracer.Start(parent, SpanRun, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	return &Run{tracer: tracer, ctx: ctx, span: span, last: now}
}

// Context is the run span's context, to pass on to what the run starts.
func (r *Run) Context() context.Context { return r.ctx }

// Observe turns one event into span starts and ends.
func (r *Run) Observe(ev *agent.Event) {
	switch ev.Type {
	case agent.EventStep:
		r.endStep(ev.Time)
		start := r.last
		if ev.LatencyMS != nil {
			if s := ev.Time.Add(-time.Duration(*ev.LatencyMS) * time.Millisecond); s.After(start) {
				start = s
			}
		}
		attrs := []attribute.KeyValue{attribute.Int("artagent.step", ev.Step)}
		if ev.Action != "" {
			attrs = append(attrs, attribute.String("artagent.action", string(ev.Action)))
		}
		sctx, step := r.tracer.Start(r.ctx, SpanStep, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		_, p := r.tracer.Start(sctx, SpanProvider, trace.WithTimestamp(start), trace.WithAttributes(usage(ev.Usage)...))
		p.SetAttributes(attribute.Int("artagent.provider.retries", len(ev.Retries)))
		p.End(trace.WithTimestamp(ev.Time))
		name := SpanAction
		if ev.Action == provider.ActionVerify {
			name = SpanVerify
		}
		_, r.action = r.tracer.Start(sctx, name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
		r.step = step
	case agent.EventObservation, agent.EventRejected, agent.EventVerify, agent.EventTruncated:
		if r.action != nil {
			if ev.ExitCode != nil {
				r.action.SetAttributes(attribute.Int("process.exit.code", *ev.ExitCode))
			}
			if ev.Passed != nil {
				r.action.SetAttributes(attribute.Bool("artagent.verify.passed", *ev.Passed))
			}
			if ev.Refusal != "" {
				r.action.SetAttributes(attribute.String("artagent.refusal", string(ev.Refusal)))
				r.action.SetStatus(codes.Error, "refused: "+string(ev.Refusal))
			}
			if ev.Type == agent.EventTruncated {
				r.action.SetStatus(codes.Error, "reply truncated")
			}
		}
		r.endStep(ev.Time)
	case agent.EventResult:
		r.endStep(ev.Time)
		r.span.SetAttributes(attribute.String("artagent.status", string(ev.Status)))
		if ev.Steps != nil {
			r.span.SetAttributes(attribute.Int("artagent.steps", *ev.Steps))
		}
		if ev.Verified != nil {
			r.span.SetAttributes(attribute.Bool("artagent.verified", *ev.Verified))
		}
		r.span.SetAttributes(usage(ev.Usage)...)
		if ev.Status != agent.StatusFinished {
			r.span.SetStatus(codes.Error, string(ev.Status))
		}
		r.span.End(trace.WithTimestamp(ev.Time))
	}
}

// End ends the run's span if no result event did (a run that could not
// start); ending twice is harmless.
func (r *Run) End() { r.span.End() }

func (r *Run) endStep(at time.Time) {
	if r.action != nil {
		r.action.End(trace.WithTimestamp(at))
		r.action = nil
	}
	if r.step != nil {
		r.step.End(trace.WithTimestamp(at))
		r.step = nil
		r.last = at
	}
}

func usage(u *provider.Usage) []attribute.KeyValue {
	if u == nil {
		return nil
	}
	return []attribute.KeyValue{
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
	}
}
