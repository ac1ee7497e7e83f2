package otlpexport

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

// reportEvery is how often progress is written back while records flow:
// the tool needs it only when the exporter dies before "done".
const reportEvery = 200 * time.Millisecond

// Serve exports the stream r (otlpwire frames) with e until r ends, then
// closes e (sending what is buffered, bounded by its timeout) and writes
// the final counts to status. A malformed envelope is dropped and counted;
// a malformed frame ends the stream (what follows cannot be framed) and is
// returned after the final counts.
func Serve(r io.Reader, status io.Writer, e *Exporter) error {
	st := &statusWriter{w: bufio.NewWriter(status)}
	if e.warn == nil {
		e.warn = func(err error) { st.line(otlpwire.StatusWarn + " " + oneLine(err.Error())) }
	}
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		t := time.NewTicker(reportEvery)
		defer t.Stop()
		var last [2]int64
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				l, s := e.Exported()
				if [2]int64{l, s} != last {
					last = [2]int64{l, s}
					st.line(fmt.Sprintf("%s %d %d", otlpwire.StatusExported, l, s))
				}
			}
		}
	}()
	err := read(otlpwire.NewReader(r), e)
	close(stop)
	<-reported
	e.Close()
	l, s := e.Exported()
	st.line(fmt.Sprintf("%s %d %d", otlpwire.StatusDone, l, s))
	return err
}

// read hands every frame of r to e until the stream ends.
func read(r *otlpwire.Reader, e *Exporter) error {
	for {
		kind, payload, err := r.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		switch kind {
		case otlpwire.KindLog:
			env, err := ReadEnvelope(payload)
			if err != nil {
				e.logs.dropped.Add(1)
				e.warnOnce(fmt.Errorf("events %s: a log record that is not an envelope was dropped: %w", e.target, err))
				continue
			}
			e.Log(&env)
		case otlpwire.KindSpan:
			s, err := otlpwire.DecodeSpan(payload)
			if err != nil {
				e.spans.dropped.Add(1)
				e.warnOnce(fmt.Errorf("events %s: a span record was dropped: %w", e.target, err))
				continue
			}
			e.Span(&s)
		}
	}
}

// warnOnce reports a malformed record once a process, like a failed export.
func (e *Exporter) warnOnce(err error) {
	if e.warn != nil && e.failing.CompareAndSwap(false, true) {
		e.warn(err)
	}
}

// statusWriter writes whole lines from any goroutine.
type statusWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (s *statusWriter) line(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.WriteString(text)
	s.w.WriteByte('\n')
	s.w.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
