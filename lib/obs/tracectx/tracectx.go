// Package tracectx carries W3C trace context (traceparent, tracestate)
// between processes through the environment, as TRACEPARENT and TRACESTATE:
// the worker puts its run's span there, and a tool started by it (artagent,
// artq) continues that trace. It only parses and formats context, with the
// OpenTelemetry propagator; it exports nothing and starts no span.
package tracectx

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/vocab"
)

// The environment variables that carry trace context between processes,
// the names OpenTelemetry's environment-carrier convention uses.
const (
	EnvTraceparent = vocab.EnvTraceparent
	EnvTracestate  = vocab.EnvTracestate
)

var w3c propagation.TraceContext

// envCarrier maps the propagator's header names (traceparent) to the
// environment's (TRACEPARENT).
type envCarrier struct {
	get func(string) string
	set map[string]string
}

func (c envCarrier) Get(key string) string {
	if c.get == nil {
		return ""
	}
	return c.get(strings.ToUpper(key))
}

func (c envCarrier) Set(key, value string) {
	if c.set != nil {
		c.set[strings.ToUpper(key)] = value
	}
}

func (c envCarrier) Keys() []string { return []string{EnvTraceparent, EnvTracestate} }

// FromEnv returns ctx carrying the remote span context that getenv's
// TRACEPARENT (and TRACESTATE) name, so spans started from it are children
// of the caller's span. A missing or malformed TRACEPARENT leaves ctx as it
// is: a new trace starts, as the W3C spec asks of an invalid header.
func FromEnv(ctx context.Context, getenv func(string) string) context.Context {
	return w3c.Extract(ctx, envCarrier{get: getenv})
}

// Inject sets TRACEPARENT (and TRACESTATE when there is one) in env from
// the span in ctx. Without a valid span in ctx it removes them, so a child
// never inherits a stale context.
func Inject(ctx context.Context, env map[string]string) {
	delete(env, EnvTraceparent)
	delete(env, EnvTracestate)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, envCarrier{set: env})
}
