// Package otlp exports art's telemetry to an OpenTelemetry collector over
// OTLP/HTTP through an exporter process: the tool starts artobs-otlp
// (cmd/artobs-otlp, lib/obs/otlp/otlpexport) and writes to it through a
// pipe the already-redacted event envelopes (an obs.Sink, so redaction has
// happened before anything is written) and the spans it finishes (Tracer:
// queue attempts, agent runs and steps, with W3C ids made here so
// TRACEPARENT works as with any tracer). The exporter links the official
// OpenTelemetry SDK and exporters; this package links only the
// OpenTelemetry trace API and the wire format (lib/obs/otlp/otlpwire), so
// the tools that export stay lean (internal/layout/binaries_test.go).
//
// Export is best effort by contract: writes go into a bounded buffer and
// never block (a full buffer drops and counts), a dead exporter is one
// warning, and at Close one warning says how many log records and spans
// were dropped, counted here: every record handed over that the exporter
// did not report exported. Nothing here blocks or fails the work.
package otlp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

// Scheme starts an OTLP/HTTP sink spec: otlphttp://HOST:PORT.
const Scheme = otlpwire.Scheme

// ExporterName is the exporter program's name (cmd/artobs-otlp).
const ExporterName = "artobs-otlp"

// Options configure an Exporter.
type Options struct {
	// Service is the resource's service.name (artq, artagent).
	Service string
	// Version is its service.version.
	Version string
	// Warn is told about the first failed export, an exporter that
	// stopped, and, at Close, what was dropped. nil ignores.
	Warn func(error)
	// Buffer bounds the records waiting to be written to the exporter,
	// and each of the exporter's own queues (default DefaultBuffer).
	Buffer int
	// Timeout bounds one export request, and what Close waits for the
	// exporter to send what it holds (default DefaultTimeout).
	Timeout time.Duration
	// Find returns the exporter program's path (internal/clibase.Companion:
	// beside the tool, else on PATH). Required.
	Find func(name string) (string, error)
	// Stderr receives the exporter's own stderr (a crash's message);
	// nil is os.Stderr.
	Stderr io.Writer
}

// Defaults (one home: otlpwire, which both sides of the pipe import).
const (
	DefaultBuffer  = otlpwire.DefaultBuffer
	DefaultTimeout = otlpwire.DefaultTimeout
)

// record is one frame waiting to be written: a log record or a span.
type record struct {
	env  *obs.Envelope
	span *span
}

// Exporter is one exporter process and the bounded buffer in front of it.
type Exporter struct {
	target  string
	warn    func(error)
	timeout time.Duration
	cmd     *exec.Cmd

	ch      chan record
	stop    chan struct{}
	stopped atomic.Bool
	written chan struct{} // the writer has returned and closed the pipe
	exited  chan struct{} // the process has been waited for
	status  chan struct{} // its status stream has ended

	sentLogs, sentSpans         atomic.Int64
	exportedLogs, exportedSpans atomic.Int64
	dead                        atomic.Bool
	closing                     atomic.Bool
	deadOnce, closeOnce         sync.Once
}

// Open starts the exporter process for spec (otlphttp://HOST:PORT). It
// does not wait for the collector: an unreachable one shows at the first
// export, as a warning. The exporter program missing is an error naming
// it (exit 127); a bad spec is a usage error.
func Open(spec string, o Options) (*Exporter, error) {
	if _, err := otlpwire.ParseTarget(spec); err != nil {
		return nil, err
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	exe, err := o.Find(ExporterName)
	if err != nil {
		return nil, exitcode.WithHint(exitcode.Errorf(exitcode.ProgramNotFound, "events %s: %v", spec, err),
			"an otlphttp:// sink runs "+ExporterName+", installed beside the tool (make install)")
	}
	streamR, streamW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", spec, err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		streamR.Close()
		streamW.Close()
		return nil, fmt.Errorf("events %s: %w", spec, err)
	}
	// The settings go in the environment (otlpwire.Env*), where the
	// exporter's flags read their defaults.
	cmd := exec.Command(exe, spec)
	cmd.Env = append(os.Environ(), otlpwire.EnvService+"="+o.Service, otlpwire.EnvServiceVersion+"="+o.Version,
		otlpwire.EnvBuffer+"="+strconv.Itoa(o.Buffer), otlpwire.EnvTimeout+"="+o.Timeout.String())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = streamR, statusW, o.Stderr
	// A process group of its own: the Ctrl-C that interrupts the tool
	// must not kill the exporter before the tool's last records are in;
	// the tool ends the stream, and kills it if it hangs (Close).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	streamR.Close()
	statusW.Close()
	if err != nil {
		streamW.Close()
		statusR.Close()
		return nil, exitcode.Errorf(exitcode.Refused, "events %s: start %s: %v", spec, exe, err)
	}
	e := &Exporter{
		target: spec, warn: o.Warn, timeout: o.Timeout, cmd: cmd,
		ch: make(chan record, o.Buffer), stop: make(chan struct{}),
		written: make(chan struct{}), exited: make(chan struct{}), status: make(chan struct{}),
	}
	go e.write(streamW)
	go e.readStatus(statusR)
	go e.wait()
	return e, nil
}

// put queues r without blocking; sent counts it whatever becomes of it.
func (e *Exporter) put(r record, sent *atomic.Int64) {
	sent.Add(1)
	if e.dead.Load() || e.stopped.Load() {
		return
	}
	select {
	case e.ch <- r:
	default:
	}
}

// writeEvery is how often the writer wakes to move what is queued into
// the pipe. Waking it for every record would cost each Append a goroutine
// wake-up and each record a write(2); in batches the work pays a channel
// send per record, and the exporter (which batches for 200 ms itself)
// sees the records at most this much later, and wakes 10 times a second
// rather than 50 (docs/performance.md, Observability export).
const writeEvery = 100 * time.Millisecond

// write encodes queued records into the pipe until Close, and then what is
// still queued. A failed write means the exporter is gone: it stops.
func (e *Exporter) write(pipe *os.File) {
	defer close(e.written)
	defer pipe.Close()
	w := bufio.NewWriterSize(pipe, 64<<10)
	w.WriteString(otlpwire.Magic)
	var buf []byte
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for {
		stopping := false
		select {
		case <-tick.C:
		case <-e.stop:
			stopping = true
		}
		for more := true; more; {
			select {
			case r := <-e.ch:
				buf = r.appendFrame(w, buf)
			default:
				more = false
			}
		}
		if err := w.Flush(); err != nil {
			e.die(err)
			return
		}
		if stopping {
			return
		}
	}
}

// appendFrame writes r's frame to w (a write error shows at the next
// Flush), with buf as scratch space, and returns buf.
func (r record) appendFrame(w *bufio.Writer, buf []byte) []byte {
	var kind byte
	if r.env != nil {
		// AppendLine writes the canonical JSON and a newline.
		buf = r.env.AppendLine(buf[:0])
		buf = buf[:len(buf)-1]
		kind = otlpwire.KindLog
	} else {
		buf = otlpwire.AppendSpan(buf[:0], &r.span.rec)
		kind = otlpwire.KindSpan
	}
	var hdr [16]byte
	w.Write(otlpwire.AppendHeader(hdr[:0], kind, len(buf)))
	w.Write(buf)
	return buf
}

// readStatus follows the exporter's status lines: warnings are passed
// on, counts kept.
func (e *Exporter) readStatus(r *os.File) {
	defer close(e.status)
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		kind, logs, spans, text, err := otlpwire.ParseStatus(sc.Text())
		switch {
		case err != nil:
			e.warnf("%v", err)
		case kind == otlpwire.StatusWarn:
			e.warnf("%s", text)
		default:
			e.exportedLogs.Store(logs)
			e.exportedSpans.Store(spans)
		}
	}
}

// wait reaps the exporter; an exit before Close is a warning.
func (e *Exporter) wait() {
	err := e.cmd.Wait()
	close(e.exited)
	if !e.closing.Load() {
		if err == nil {
			err = errors.New("exit status 0")
		}
		e.die(err)
	}
}

// die stops writing to an exporter that is gone, once, with a warning
// unless Close is what ended it.
func (e *Exporter) die(err error) {
	e.deadOnce.Do(func() {
		e.dead.Store(true)
		if !e.closing.Load() {
			e.warnf("events %s: the exporter %s stopped (%v): records are dropped from now on (counted at the end)", e.target, ExporterName, err)
		}
	})
}

func (e *Exporter) warnf(format string, args ...any) {
	if e.warn != nil {
		e.warn(fmt.Errorf(format, args...))
	}
}

// Dropped counts the log records and spans handed over and not reported
// exported: after Close, what never reached the collector.
func (e *Exporter) Dropped() (logs, spans int64) {
	xl, xs := e.Exported()
	return e.sentLogs.Load() - xl, e.sentSpans.Load() - xs
}

// Exported counts the log records and spans the exporter reported
// accepted by the collector.
func (e *Exporter) Exported() (logs, spans int64) {
	return e.exportedLogs.Load(), e.exportedSpans.Load()
}

// Close ends the stream, gives the exporter the timeout (and a second) to
// send what it holds and report, kills it past that, and warns once with
// the drop counts when anything was dropped. Spans still open are not
// exported. It is idempotent and never fails.
func (e *Exporter) Close() error {
	e.closeOnce.Do(func() {
		e.closing.Store(true)
		e.stopped.Store(true)
		close(e.stop)
		deadline := time.NewTimer(e.timeout + time.Second)
		defer deadline.Stop()
		select {
		case <-e.written:
		case <-deadline.C:
			// The exporter does not read: killing it ends the write.
			e.kill()
		}
		select {
		case <-e.exited:
		case <-deadline.C:
			e.kill()
			<-e.exited
		}
		<-e.written
		<-e.status
		if l, s := e.Dropped(); l > 0 || s > 0 {
			xl, xs := e.Exported()
			e.warnf("events %s: %d log records and %d spans dropped (%d and %d exported)", e.target, l, s, xl, xs)
		}
	})
	return nil
}

func (e *Exporter) kill() {
	e.warnf("events %s: the exporter %s did not finish within %s: killed", e.target, ExporterName, e.timeout+time.Second)
	e.cmd.Process.Kill()
}

// Sink returns the obs.Sink that hands every envelope to the exporter as a
// log record. Append only queues: Appended means "handed over", and what
// the collector never got is counted at Close. Closing the sink closes the
// exporter.
func (e *Exporter) Sink() obs.Sink { return sink{e} }

type sink struct{ e *Exporter }

func (s sink) Name() string { return s.e.target }

func (s sink) Append(_ context.Context, env *obs.Envelope) (obs.Outcome, error) {
	s.e.put(record{env: env}, &s.e.sentLogs)
	return obs.Appended, nil
}

func (s sink) Close() error { return s.e.Close() }

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
