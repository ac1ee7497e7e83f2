// Package queuetrace records a worker's attempts as OpenTelemetry spans,
// through worker.Hooks: one span per attempt (artq.attempt) with a child
// for its command (artq.run) and one for its acceptance (artq.acceptance).
// Each run gets its span's W3C context in its environment (TRACEPARENT,
// TRACESTATE), so a tool the task starts continues the trace. Spans carry
// the task's id, attempt, step, status and exit code, never its program,
// arguments or output (those can hold secrets; the redacted events carry
// what may be said about them).
//
// It uses only the OpenTelemetry trace API: who exports the spans is the
// tracer's business (lib/obs/otlp in artq).
package queuetrace

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/obs/tracectx"
	"github.com/art-runtime/art/lib/queue/worker"
)

// Span names.
const (
	SpanAttempt    = "artq.attempt"
	SpanRun        = "artq.run"
	SpanAcceptance = "artq.acceptance"
)

// Hooks are the worker.Hooks that make the spans. Parent is the context
// every attempt span starts under: the worker's own incoming TRACEPARENT,
// or none (each attempt is then the root of its own trace).
type Hooks struct {
	tracer trace.Tracer
	parent context.Context
	queue  string
	worker string

	mu       sync.Mutex
	attempts map[string]*attempt
}

type attempt struct {
	ctx  context.Context
	span trace.Span
	ok   bool
}

// New returns Hooks starting spans with tracer under parent's span (if
// any), for the named queue and worker.
func New(tracer trace.Tracer, parent context.Context, queue, workerID string) *Hooks {
	return &Hooks{tracer: tracer, parent: parent, queue: queue, worker: workerID, attempts: map[string]*attempt{}}
}

// attempt returns the span of r's attempt, starting it on the first run.
func (h *Hooks) attempt(r *worker.Run) *attempt {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.attempts[r.Task.ID]
	if a == nil {
		ctx, span := h.tracer.Start(h.parent, SpanAttempt, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("artq.queue", h.queue),
			attribute.String("artq.worker", h.worker),
			attribute.String("artq.task.id", r.Task.ID),
			attribute.Int("artq.attempt", r.Attempt),
			attribute.String("artq.workspace.mode", string(r.Workspace.Mode)),
			attribute.Int64("artq.workspace.prepare_ms", r.Workspace.Prepare.Milliseconds()),
		))
		a = &attempt{ctx: ctx, span: span, ok: true}
		h.attempts[r.Task.ID] = a
	}
	return a
}

// Runner implements worker.Hooks: the run's span, its context in the run's
// environment, its outcome as attributes and status.
func (h *Hooks) Runner(r *worker.Run, next execx.RunFunc) execx.RunFunc {
	return func(ctx context.Context, pol *execx.Policy, task *execx.Task, o execx.Options) (*execx.Result, error) {
		a := h.attempt(r)
		name := SpanRun
		if r.Step == "acceptance" {
			name = SpanAcceptance
		}
		sctx, span := h.tracer.Start(a.ctx, name, trace.WithAttributes(attribute.String("artq.step", r.Step)))
		if task.Env.Set == nil {
			task.Env.Set = map[string]string{}
		}
		tracectx.Inject(sctx, task.Env.Set)
		res, err := next(ctx, pol, task, o)
		ok := err == nil && res != nil && res.Status == execx.StatusSucceeded
		switch {
		case err != nil:
			span.SetStatus(codes.Error, "not run")
		case res != nil:
			span.SetAttributes(
				attribute.String("artq.status", string(res.Status)),
				attribute.Int("process.exit.code", res.ExitCode),
				attribute.Bool("artq.timed_out", res.TimedOut),
			)
			if res.Signal != "" {
				span.SetAttributes(attribute.String("artq.signal", res.Signal))
			}
			if !ok {
				span.SetStatus(codes.Error, string(res.Status))
			}
		}
		span.End()
		h.mu.Lock()
		a.ok = a.ok && ok
		h.mu.Unlock()
		return res, err
	}
}

// AttemptDone implements worker.Hooks: the attempt's span ends, an error
// when any of its runs did not succeed.
func (h *Hooks) AttemptDone(task string) {
	h.mu.Lock()
	a := h.attempts[task]
	delete(h.attempts, task)
	h.mu.Unlock()
	if a == nil {
		return
	}
	if !a.ok {
		a.span.SetStatus(codes.Error, "attempt did not succeed")
	}
	a.span.End()
}

var _ worker.Hooks = (*Hooks)(nil)
