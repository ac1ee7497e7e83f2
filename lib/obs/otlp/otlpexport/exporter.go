// Package otlpexport is the OpenTelemetry side of art's export, run in its
// own process (cmd/artobs-otlp): it reads the stream a tool writes to it
// (lib/obs/otlp/otlpwire: redacted event envelopes and finished spans) and
// sends them to a collector over OTLP/HTTP (protobuf) with the official
// OpenTelemetry Go SDK and exporters. Every envelope becomes a log record,
// every span record an OTLP span. Export is best effort by contract: records
// wait in bounded buffers, a full buffer or a failed request drops them and
// counts them, and the counts go back to the tool, which reports them.
//
// The SDK, the exporters and what they link (gRPC and grpc-gateway come
// with the generated OTLP collector code even over HTTP, and protobuf) are
// linked here only: artq and artagent stay lean
// (internal/layout/binaries_test.go).
package otlpexport

import (
	"context"
	"fmt"
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

	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

// Options configure an Exporter.
type Options struct {
	// Service is the resource's service.name (artq, artagent).
	Service string
	// Version is its service.version.
	Version string
	// Warn is told about the first failed export. nil ignores.
	Warn func(error)
	// Buffer bounds each signal's queue (default DefaultBuffer records).
	Buffer int
	// Timeout bounds one export request, and Close's final send
	// (default DefaultTimeout).
	Timeout time.Duration
}

// Defaults (one home: otlpwire, which both sides of the pipe import).
const (
	DefaultBuffer  = otlpwire.DefaultBuffer
	DefaultTimeout = otlpwire.DefaultTimeout
)

// Exporter owns the OTLP pipeline: a logger whose records and a span
// buffer whose spans go through bounded buffers to the collector.
type Exporter struct {
	target string
	warn   func(error)
	res    *resource.Resource
	logs   *buffer[*sdklog.Record]
	spans  *buffer[sdktrace.ReadOnlySpan]
	lp     *sdklog.LoggerProvider
	logger otellog.Logger

	failing   atomic.Bool
	closeOnce sync.Once
}

// Open starts an exporter to hostport (HOST:PORT, checked by the tool:
// otlpwire.ParseTarget); target names it in warnings. It does not
// connect: an unreachable collector shows at the first export, as a
// warning.
func Open(hostport, target string, o Options) (*Exporter, error) {
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx := context.Background()
	// Retries are off: a failed batch is dropped and counted rather than
	// held while newer records pile up behind it.
	le, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(hostport), otlploghttp.WithInsecure(),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}), otlploghttp.WithTimeout(o.Timeout))
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", target, err)
	}
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hostport), otlptracehttp.WithInsecure(),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), otlptracehttp.WithTimeout(o.Timeout))
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", target, err)
	}
	e := &Exporter{target: target, warn: o.Warn}
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
	e.res = resource.NewSchemaless(attrs...)
	e.lp = sdklog.NewLoggerProvider(sdklog.WithResource(e.res), sdklog.WithProcessor(logProcessor{e.logs}))
	e.logger = e.lp.Logger(scope)
	return e, nil
}

// scope is the instrumentation scope of everything art exports.
const scope = "github.com/art-runtime/art"

// failed warns on the first failed export only (the counts come at the
// end), so a collector that is down costs one line, not one a batch.
func (e *Exporter) failed(what string) func(int, error) {
	return func(n int, err error) {
		if e.warn != nil && e.failing.CompareAndSwap(false, true) {
			e.warn(fmt.Errorf("events %s: export failed, %d %s dropped (more are counted at the end): %w", e.target, n, what, err))
		}
	}
}

// Dropped counts the log records and spans not exported so far.
func (e *Exporter) Dropped() (logs, spans int64) {
	return e.logs.dropped.Load(), e.spans.dropped.Load()
}

// Exported counts the log records and spans the collector accepted.
func (e *Exporter) Exported() (logs, spans int64) {
	return e.logs.exported.Load(), e.spans.exported.Load()
}

// Close sends what is buffered within the timeout (both signals at once)
// and stops. It is idempotent and never fails.
func (e *Exporter) Close() error {
	e.closeOnce.Do(func() {
		e.lp.Shutdown(context.Background())
		var wg sync.WaitGroup
		wg.Go(e.logs.close)
		wg.Go(e.spans.close)
		wg.Wait()
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
