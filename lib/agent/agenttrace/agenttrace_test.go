package agenttrace

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
)

func ptr[T any](v T) *T { return &v }

// A run of three steps (a tool, a refused edit, a verify, then finish)
// becomes one run span, a step span each, and under each step its
// provider call and its action, timed from the events.
func TestSpansFromEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := Start(context.Background(), tp.Tracer("test"))
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, ev := range []*agent.Event{
		{Type: agent.EventStep, Step: 1, Time: at(100), Action: provider.ActionRunTool, LatencyMS: ptr[int64](90), Usage: &provider.Usage{InputTokens: 10, OutputTokens: 2}},
		{Type: agent.EventObservation, Step: 1, Time: at(150), ExitCode: ptr(0)},
		{Type: agent.EventStep, Step: 2, Time: at(250), Action: provider.ActionReplaceText, LatencyMS: ptr[int64](80)},
		{Type: agent.EventRejected, Step: 2, Time: at(251), Refusal: agent.RefusalPath},
		{Type: agent.EventStep, Step: 3, Time: at(300), Action: provider.ActionVerify, LatencyMS: ptr[int64](40)},
		{Type: agent.EventVerify, Step: 3, Time: at(400), Passed: ptr(true), ExitCode: ptr(0)},
		{Type: agent.EventStep, Step: 4, Time: at(450), Action: provider.ActionFinish, LatencyMS: ptr[int64](40)},
		{Type: agent.EventResult, Time: at(451), Status: agent.StatusFinished, Steps: ptr(4), Verified: ptr(true)},
	} {
		r.Observe(ev)
	}
	r.End()
	spans := rec.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
		ids[s.SpanContext().SpanID().String()] = s
	}
	if n := len(byName[SpanRun]); n != 1 {
		t.Fatalf("%d run spans; want 1", n)
	}
	run := byName[SpanRun][0]
	if run.Status().Code == codes.Error || !run.EndTime().Equal(at(451)) {
		t.Errorf("run span status %v, end %v; want ok, ended at the result", run.Status(), run.EndTime())
	}
	if len(byName[SpanStep]) != 4 || len(byName[SpanProvider]) != 4 || len(byName[SpanAction]) != 3 || len(byName[SpanVerify]) != 1 {
		t.Fatalf("spans %d step, %d provider, %d action, %d verify; want 4, 4, 3, 1", len(byName[SpanStep]), len(byName[SpanProvider]), len(byName[SpanAction]), len(byName[SpanVerify]))
	}
	for _, s := range spans {
		parent := ids[s.Parent().SpanID().String()]
		want := map[string]string{SpanStep: SpanRun, SpanProvider: SpanStep, SpanAction: SpanStep, SpanVerify: SpanStep}[s.Name()]
		if want != "" && (parent == nil || parent.Name() != want) {
			t.Errorf("%s's parent is %v; want %s", s.Name(), parent, want)
		}
		if s.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
	}
	p1 := byName[SpanProvider][0]
	if !p1.StartTime().Equal(at(10)) || !p1.EndTime().Equal(at(100)) {
		t.Errorf("step 1's provider span %v–%v; want the 90 ms before its step event", p1.StartTime().Sub(t0), p1.EndTime().Sub(t0))
	}
	refused := byName[SpanAction][1]
	if refused.Status().Code != codes.Error {
		t.Errorf("the refused edit's span status %v; want an error", refused.Status())
	}
}

// A run that did not finish is an error span.
func TestUnfinishedRunIsAnError(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := Start(context.Background(), tp.Tracer("test"))
	r.Observe(&agent.Event{Type: agent.EventResult, Time: time.Now(), Status: agent.StatusProviderError})
	r.End()
	if s := rec.Ended(); len(s) != 1 || s[0].Status().Code != codes.Error {
		t.Fatalf("ended %v; want one run span with an error status", s)
	}
}

// BenchmarkStep is what tracing adds to one agent step: a step event and
// its observation turned into three spans, through the SDK with a
// processor that keeps nothing.
//
//	go test -run '^$' -bench Step ./lib/agent/agenttrace/
func BenchmarkStep(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	r := Start(context.Background(), tp.Tracer("bench"))
	now := time.Now()
	step := &agent.Event{Type: agent.EventStep, Step: 1, Time: now, Action: provider.ActionRunTool, LatencyMS: ptr[int64](5), Usage: &provider.Usage{InputTokens: 100, OutputTokens: 20}}
	obs := &agent.Event{Type: agent.EventObservation, Step: 1, Time: now, ExitCode: ptr(0)}
	b.ReportAllocs()
	for b.Loop() {
		r.Observe(step)
		r.Observe(obs)
	}
}
