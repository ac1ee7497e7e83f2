// Package otlp exports art's telemetry to an OpenTelemetry collector over
// OTLP/HTTP (protobuf), with the official OpenTelemetry Go SDK: every
// event envelope as a log record (an obs.Sink, so redaction has happened
// before it sees anything) and the spans the tools start (queue attempts,
// agent runs and steps). Export is best effort by contract: records wait in
// a bounded buffer, a full buffer or a failed request drops them and counts
// them, and the count is reported as one warning at Close. Nothing here
// blocks or fails the work.
//
// It links net/http: only artq and artagent use it (the lean binaries'
// rules are in internal/layout/binaries_test.go).
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// Scheme starts an OTLP/HTTP sink spec: otlphttp://HOST:PORT.
const Scheme = "otlphttp://"

// ErrTarget: a sink spec that is not otlphttp://HOST:PORT.
var ErrTarget = errors.New("want otlphttp://HOST:PORT (OTLP over HTTP, protobuf; no path, no credentials)")

// Options configure an Exporter.
type Options struct {
	// Service is the resource's service.name (artq, artagent).
	Service string
	// Version is its service.version.
	Version string
	// Warn is told about the first failed export of the process and,
	// at Close, about what was dropped. nil ignores.
	Warn func(error)
	// Buffer bounds each signal's queue (default DefaultBuffer records).
	Buffer int
	// Timeout bounds one export request, and Close's final send
	// (default DefaultTimeout).
	Timeout time.Duration
}

// Defaults.
const (
	DefaultBuffer  = 8192
	DefaultTimeout = 2 * time.Second
)

// ParseTarget checks an otlphttp://HOST:PORT spec and returns HOST:PORT.
func ParseTarget(spec string) (string, error) {
	hp, ok := strings.CutPrefix(spec, Scheme)
	if !ok {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: %w", spec, ErrTarget))
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" || strings.ContainsAny(hp, "/?#@ \t\n") {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: %w", spec, ErrTarget))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: port %q: %w", spec, port, ErrTarget))
	}
	return hp, nil
}

// Exporter owns the OTLP pipeline of one process: a logger and a tracer
// provider whose records go through bounded buffers to the collector.
type Exporter struct {
	target string
	warn   func(error)
	logs   *buffer[*sdklog.Record]
	spans  *buffer[sdktrace.ReadOnlySpan]
	lp     *sdklog.LoggerProvider
	tp     *sdktrace.TracerProvider
	logger otellog.Logger

	failing   atomic.Bool
	closeOnce sync.Once
}

// Open starts an exporter to spec (otlphttp://HOST:PORT). It does not
// connect: an unreachable collector shows at the first export, as a
// warning.
func Open(spec string, o Options) (*Exporter, error) {
	hp, err := ParseTarget(spec)
	if err != nil {
		return nil, err
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx := context.Background()
	// Retries are off: a failed batch is dropped and counted rather than
	// held while newer records pile up behind it.
	le, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(hp), otlploghttp.WithInsecure(),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}), otlploghttp.WithTimeout(o.Timeout))
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", spec, err)
	}
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hp), otlptracehttp.WithInsecure(),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), otlptracehttp.WithTimeout(o.Timeout))
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", spec, err)
	}
	e := &Exporter{target: spec, warn: o.Warn}
	// The buffer holds pointers: a channel of 8,192 records by value is
	// 4.8 MB that the garbage collector scans at every cycle.
	var vals []sdklog.Record
	e.logs = newBuffer(o.Buffer, o.Timeout, func(ctx context.Context, rs []*sdklog.Record) error {
		vals = vals[:0]
		for _, r := range rs {
			vals = append(vals, *r)
		}
		err := le.Export(ctx, vals)
		clear(vals)
		return err
	}, e.failed("log records"))
	e.spans = newBuffer(o.Buffer, o.Timeout, te.ExportSpans, e.failed("spans"))
	attrs := []attribute.KeyValue{attribute.String("service.name", o.Service)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	res := resource.NewSchemaless(attrs...)
	e.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(logProcessor{e.logs}))
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(spanProcessor{e.spans}),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	e.logger = e.lp.Logger(scope)
	return e, nil
}

// scope is the instrumentation scope of everything art exports.
const scope = "github.com/art-runtime/art"

// failed warns on the first failed export only (the counts come
// at Close), so a collector that is down costs one line, not one a batch.
func (e *Exporter) failed(what string) func(int, error) {
	return func(n int, err error) {
		if e.warn != nil && e.failing.CompareAndSwap(false, true) {
			e.warn(fmt.Errorf("events %s: export failed, %d %s dropped (more are counted at the end): %w", e.target, n, what, err))
		}
	}
}

// Tracer returns a tracer whose spans this exporter sends.
func (e *Exporter) Tracer() trace.Tracer { return e.tp.Tracer(scope) }

// Dropped counts the log records and spans not exported so far.
func (e *Exporter) Dropped() (logs, spans int64) {
	return e.logs.dropped.Load(), e.spans.dropped.Load()
}

// Exported counts the log records and spans the collector accepted.
func (e *Exporter) Exported() (logs, spans int64) {
	return e.logs.exported.Load(), e.spans.exported.Load()
}

// Close ends the tracer provider (spans still open are not exported),
// sends what is buffered within the timeout, and warns once with the drop
// counts when anything was dropped. It is idempotent and never fails.
func (e *Exporter) Close() error {
	e.closeOnce.Do(func() {
		ctx := context.Background()
		e.tp.Shutdown(ctx)
		e.lp.Shutdown(ctx)
		e.logs.close()
		e.spans.close()
		if l, s := e.Dropped(); (l > 0 || s > 0) && e.warn != nil {
			xl, xs := e.Exported()
			e.warn(fmt.Errorf("events %s: %d log records and %d spans dropped (%d and %d exported)", e.target, l, s, xl, xs))
		}
	})
	return nil
}

// logProcessor hands each emitted record to the buffer. The SDK reuses the
// record it passes, so it is cloned.
type logProcessor struct{ b *buffer[*sdklog.Record] }

func (p logProcessor) OnEmit(_ context.Context, r *sdklog.Record) error {
	c := r.Clone()
	p.b.put(&c)
	return nil
}
func (logProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (logProcessor) Shutdown(context.Context) error                         { return nil }
func (logProcessor) ForceFlush(context.Context) error                       { return nil }

// spanProcessor hands each ended span to the buffer.
type spanProcessor struct {
	b *buffer[sdktrace.ReadOnlySpan]
}

func (spanProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p spanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		p.b.put(s)
	}
}
func (spanProcessor) Shutdown(context.Context) error   { return nil }
func (spanProcessor) ForceFlush(context.Context) error { return nil }

// Remote opens the process's one OTLP exporter for obs.Options.Remote and
// keeps it, so the tool can start spans with its Tracer.
type Remote struct {
	Options
	Exporter *Exporter
}

// Open implements obs.Options.Remote.
func (r *Remote) Open(spec string) (obs.Sink, error) {
	if r.Exporter != nil {
		return nil, exitcode.Field(exitcode.Usage, "Events", spec, "one otlphttp:// sink a process (%s is the first)", r.Exporter.target)
	}
	e, err := Open(spec, r.Options)
	if err != nil {
		return nil, err
	}
	r.Exporter = e
	return e.Sink(), nil
}
