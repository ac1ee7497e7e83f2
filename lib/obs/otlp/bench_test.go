package otlp

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkSpans is what an agent step costs the tool with this tracer
// (lib/agent/agenttrace makes three spans a step: the step, the provider
// call, the action): start, attributes, end, handed to the buffer (a
// goroutine empties it, as the pipe writer does).
//
//	go test -run '^$' -bench Spans ./lib/obs/otlp/
func BenchmarkSpans(b *testing.B) {
	e := &Exporter{ch: make(chan record, DefaultBuffer)}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-e.ch:
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	tr := e.Tracer()
	ctx, run := tr.Start(context.Background(), "artagent.run")
	defer run.End()
	b.ReportAllocs()
	for b.Loop() {
		sctx, step := tr.Start(ctx, "artagent.step", trace.WithAttributes(attribute.Int("artagent.step", 1), attribute.String("artagent.action", "run_tool")))
		_, p := tr.Start(sctx, "artagent.provider", trace.WithAttributes(attribute.Int64("gen_ai.usage.input_tokens", 100), attribute.Int64("gen_ai.usage.output_tokens", 20)))
		p.SetAttributes(attribute.Int("artagent.provider.retries", 0))
		p.End()
		_, a := tr.Start(sctx, "artagent.action", trace.WithAttributes(attribute.Int("artagent.step", 1)))
		a.SetAttributes(attribute.Int("process.exit.code", 0))
		a.End()
		step.End()
	}
}
