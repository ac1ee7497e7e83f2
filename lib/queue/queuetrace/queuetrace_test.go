package queuetrace

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/obs/tracectx"
	"github.com/art-runtime/art/lib/queue/worker"
)

// An attempt whose command succeeds and whose acceptance fails: one
// attempt span (an error), a run and an acceptance span under it, and each
// run saw its own span as TRACEPARENT.
func TestAttemptSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := New(tp.Tracer("test"), context.Background(), "q", "w1")
	seen := map[string]string{}
	run := func(step string, status execx.Status) {
		task := &execx.Task{ID: "t1", Env: execx.TaskEnv{Set: map[string]string{tracectx.EnvTraceparent: "stale"}}}
		r := &worker.Run{Task: task, Attempt: 1, Step: step}
		next := func(_ context.Context, _ *execx.Policy, task *execx.Task, _ execx.Options) (*execx.Result, error) {
			seen[step] = task.Env.Set[tracectx.EnvTraceparent]
			res := &execx.Result{Status: status}
			if status != execx.StatusSucceeded {
				res.ExitCode = 1
			}
			return res, nil
		}
		if _, err := h.Runner(r, next)(context.Background(), nil, task, execx.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	run("command", execx.StatusSucceeded)
	run("acceptance", execx.StatusFailed)
	h.AttemptDone("t1")
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans; want 3", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	att, cmd, acc := byName[SpanAttempt], byName[SpanRun], byName[SpanAcceptance]
	if att == nil || cmd == nil || acc == nil {
		t.Fatalf("spans %v; want attempt, run, acceptance", byName)
	}
	for _, s := range []sdktrace.ReadOnlySpan{cmd, acc} {
		if s.Parent().SpanID() != att.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the attempt", s.Name())
		}
	}
	if att.Status().Code != codes.Error || acc.Status().Code != codes.Error || cmd.Status().Code == codes.Error {
		t.Errorf("statuses attempt %v, run %v, acceptance %v; want error, ok, error", att.Status(), cmd.Status(), acc.Status())
	}
	for step, s := range map[string]sdktrace.ReadOnlySpan{"command": cmd, "acceptance": acc} {
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if seen[step] != want {
			t.Errorf("%s ran with TRACEPARENT %q; want its span's %q", step, seen[step], want)
		}
	}
}
