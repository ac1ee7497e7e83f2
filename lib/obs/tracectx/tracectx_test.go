package tracectx

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	env := map[string]string{EnvTraceparent: tp, EnvTracestate: "vendor=x"}
	ctx := FromEnv(context.Background(), func(k string) string { return env[k] })
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() {
		t.Fatalf("FromEnv(%s) = %v; want the remote, sampled span it names", tp, sc)
	}
	out := map[string]string{EnvTraceparent: "stale"}
	Inject(ctx, out)
	if out[EnvTraceparent] != tp || out[EnvTracestate] != "vendor=x" {
		t.Errorf("Inject = %v; want %s and vendor=x", out, tp)
	}
}

func TestInvalidStartsNewTrace(t *testing.T) {
	for _, tp := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		ctx := FromEnv(context.Background(), func(k string) string {
			if k == EnvTraceparent {
				return tp
			}
			return ""
		})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			t.Errorf("FromEnv(%q) = %v; want no span context", tp, sc)
		}
		env := map[string]string{EnvTraceparent: "stale", EnvTracestate: "stale"}
		Inject(ctx, env)
		if len(env) != 0 {
			t.Errorf("Inject without a span left %v; want none", env)
		}
	}
}

func FuzzFromEnv(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		env := map[string]string{EnvTraceparent: tp, EnvTracestate: ts}
		ctx := FromEnv(context.Background(), func(k string) string { return env[k] })
		out := map[string]string{}
		Inject(ctx, out)
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			// What was accepted goes out again as the same trace and span.
			back := trace.SpanContextFromContext(FromEnv(context.Background(), func(k string) string { return out[k] }))
			if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() {
				t.Fatalf("%q re-injected as %q: lost the span", tp, out[EnvTraceparent])
			}
		} else if len(out) != 0 {
			t.Fatalf("%q: invalid, yet injected %v", tp, out)
		}
	})
}
