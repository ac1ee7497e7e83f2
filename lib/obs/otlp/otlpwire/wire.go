// Package otlpwire is the stream a tool writes to its OpenTelemetry exporter
// process (cmd/artobs-otlp) through a pipe: the already-redacted event
// envelopes and the finished spans, as length-prefixed frames. It is a leaf
// both ends share: the tools that make the records link it without the
// OpenTelemetry SDK, exporters, gRPC or protobuf, which only the exporter
// process links (internal/layout/binaries_test.go).
//
// The stream is Magic, then frames: one kind byte, the payload's length as
// a uvarint, the payload. A log frame's payload is an envelope's canonical
// JSON; a span frame's is a Span in the compact form AppendSpan writes.
// Nothing in a frame is trusted by its reader: Reader bounds every length
// and DecodeSpan checks every field, returning an error that names it.
package otlpwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Magic starts the stream: the protocol's name and version. A tool and an
// exporter from different builds that do not speak the same version fail
// at the first bytes, not on a misread record.
const Magic = "ARTOTLP1\n"

// The environment variables a tool sets for its exporter process: the
// defaults of the exporter's --service, --service-version, --buffer and
// --timeout (internal/otlpcli).
const (
	EnvService        = "ARTOBS_OTLP_SERVICE"
	EnvServiceVersion = "ARTOBS_OTLP_SERVICE_VERSION"
	EnvBuffer         = "ARTOBS_OTLP_BUFFER"
	EnvTimeout        = "ARTOBS_OTLP_TIMEOUT"
)

// The defaults both sides share: the records a tool holds for its
// exporter (and the exporter in each of its queues), and how long one
// export request, and the final send at the end, may take.
const (
	DefaultBuffer  = 8192
	DefaultTimeout = 2 * time.Second
)

// Frame kinds.
const (
	KindLog  byte = 'L'
	KindSpan byte = 'S'
)

// MaxFrame bounds one frame's payload: an envelope is at most
// obs.MaxDraftBytes plus its header; a span is far smaller.
const MaxFrame = 4 << 20

// Errors of the reader.
var (
	ErrMagic = errors.New("otlpwire: the stream does not start with " + fmt.Sprintf("%q", Magic) + " (tool and exporter from different builds?)")
	ErrFrame = errors.New("otlpwire: malformed frame")
)

// AppendFrame appends one frame of kind holding payload.
func AppendFrame(dst []byte, kind byte, payload []byte) []byte {
	return append(AppendHeader(dst, kind, len(payload)), payload...)
}

// AppendHeader appends the header of a frame of kind whose payload is n
// bytes: the payload follows it.
func AppendHeader(dst []byte, kind byte, n int) []byte {
	return binary.AppendUvarint(append(dst, kind), uint64(n))
}

// Reader reads frames.
type Reader struct {
	r     *bufio.Reader
	buf   []byte
	magic bool
}

// NewReader reads frames from r, which starts with Magic.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next frame's kind and payload; the payload is valid
// until the next call. io.EOF ends a stream cut between frames; a stream
// cut inside a frame is io.ErrUnexpectedEOF.
func (r *Reader) Next() (kind byte, payload []byte, err error) {
	if !r.magic {
		m := make([]byte, len(Magic))
		if _, err := io.ReadFull(r.r, m); err != nil || string(m) != Magic {
			if err == io.EOF {
				return 0, nil, io.EOF
			}
			return 0, nil, ErrMagic
		}
		r.magic = true
	}
	kind, err = r.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	if kind != KindLog && kind != KindSpan {
		return 0, nil, fmt.Errorf("%w: kind %q", ErrFrame, kind)
	}
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return 0, nil, unexpected(err)
	}
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: length %d over %d", ErrFrame, n, MaxFrame)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return 0, nil, unexpected(err)
	}
	return kind, r.buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Span is one finished span: what the exporter needs to build the OTLP
// span, and nothing the tool did not decide to say (attributes never hold
// a program, argument or output: lib/queue/queuetrace, lib/agent/agenttrace).
type Span struct {
	TraceID      [16]byte
	SpanID       [8]byte
	Parent       [8]byte // zero: a root span
	RemoteParent bool    // the parent came from TRACEPARENT
	Sampled      bool
	TraceState   string
	Name         string
	Kind         int   // trace.SpanKind
	Start, End   int64 // Unix nanoseconds
	StatusCode   int   // codes.Code: 0 unset, 1 error, 2 ok
	StatusText   string
	Attrs        []Attr
}

// Attr is one attribute. Type says which of the value fields holds it.
type Attr struct {
	Key   string
	Type  byte // AttrString, AttrInt, AttrBool, AttrFloat
	Str   string
	Int   int64
	Float float64
	Bool  bool
}

// Attribute value types.
const (
	AttrString byte = 's'
	AttrInt    byte = 'i'
	AttrBool   byte = 'b'
	AttrFloat  byte = 'f'
)

// Bounds DecodeSpan holds: more is a malformed record, not a big one.
const (
	maxString = 64 << 10
	maxAttrs  = 1024
	maxKind   = 5
	maxCode   = 2
)

// AppendSpan appends s's compact form.
func AppendSpan(dst []byte, s *Span) []byte {
	dst = append(dst, s.TraceID[:]...)
	dst = append(dst, s.SpanID[:]...)
	dst = append(dst, s.Parent[:]...)
	var flags byte
	if s.RemoteParent {
		flags |= 1
	}
	if s.Sampled {
		flags |= 2
	}
	dst = append(dst, flags, byte(s.Kind), byte(s.StatusCode))
	dst = appendString(dst, s.TraceState)
	dst = appendString(dst, s.Name)
	dst = binary.AppendVarint(dst, s.Start)
	dst = binary.AppendVarint(dst, s.End)
	dst = appendString(dst, s.StatusText)
	dst = binary.AppendUvarint(dst, uint64(len(s.Attrs)))
	for i := range s.Attrs {
		a := &s.Attrs[i]
		dst = appendString(dst, a.Key)
		dst = append(dst, a.Type)
		switch a.Type {
		case AttrString:
			dst = appendString(dst, a.Str)
		case AttrInt:
			dst = binary.AppendVarint(dst, a.Int)
		case AttrBool:
			b := byte(0)
			if a.Bool {
				b = 1
			}
			dst = append(dst, b)
		case AttrFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(a.Float))
		}
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeSpan reads a span frame's payload; the error names the field that
// is malformed. Trailing bytes are an error.
func DecodeSpan(b []byte) (Span, error) {
	d := decoder{b: b}
	var s Span
	d.bytes("trace_id", s.TraceID[:])
	d.bytes("span_id", s.SpanID[:])
	d.bytes("parent", s.Parent[:])
	flags := d.byte("flags")
	s.RemoteParent, s.Sampled = flags&1 != 0, flags&2 != 0
	s.Kind = int(d.byte("kind"))
	s.StatusCode = int(d.byte("status_code"))
	s.TraceState = d.string("trace_state")
	s.Name = d.string("name")
	s.Start = d.varint("start")
	s.End = d.varint("end")
	s.StatusText = d.string("status_text")
	n := d.uvarint("attrs")
	if d.err == nil && n > maxAttrs {
		d.fail("attrs", fmt.Sprintf("%d attributes, over %d", n, maxAttrs))
	}
	for i := uint64(0); d.err == nil && i < n; i++ {
		a := Attr{Key: d.string("attr.key"), Type: d.byte("attr.type")}
		switch a.Type {
		case AttrString:
			a.Str = d.string("attr." + a.Key)
		case AttrInt:
			a.Int = d.varint("attr." + a.Key)
		case AttrBool:
			switch d.byte("attr." + a.Key) {
			case 0:
			case 1:
				a.Bool = true
			default:
				d.fail("attr."+a.Key, "bool not 0 or 1")
			}
		case AttrFloat:
			var f [8]byte
			d.bytes("attr."+a.Key, f[:])
			a.Float = math.Float64frombits(binary.LittleEndian.Uint64(f[:]))
		default:
			d.fail("attr.type", fmt.Sprintf("unknown type %q", a.Type))
		}
		s.Attrs = append(s.Attrs, a)
	}
	switch {
	case d.err != nil:
	case flags > 3:
		d.fail("flags", fmt.Sprintf("unknown bits %#x", flags))
	case s.TraceID == [16]byte{}:
		d.fail("trace_id", "zero")
	case s.SpanID == [8]byte{}:
		d.fail("span_id", "zero")
	case s.Kind > maxKind:
		d.fail("kind", fmt.Sprintf("%d over %d", s.Kind, maxKind))
	case s.StatusCode > maxCode:
		d.fail("status_code", fmt.Sprintf("%d over %d", s.StatusCode, maxCode))
	case s.End < s.Start:
		d.fail("end", "before start")
	case len(d.b) != 0:
		d.fail("span", fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return Span{}, d.err
	}
	return s, nil
}

// FieldError is a malformed span field.
type FieldError struct{ Field, Why string }

func (e *FieldError) Error() string { return "otlpwire: span " + e.Field + ": " + e.Why }

// Is makes every FieldError match ErrFrame.
func (e *FieldError) Is(target error) bool { return target == ErrFrame }

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(field, why string) {
	if d.err == nil {
		d.err = &FieldError{field, why}
	}
}

func (d *decoder) bytes(field string, dst []byte) {
	if d.err != nil {
		return
	}
	if len(d.b) < len(dst) {
		d.fail(field, "truncated")
		return
	}
	copy(dst, d.b)
	d.b = d.b[len(dst):]
}

func (d *decoder) byte(field string) byte {
	var b [1]byte
	d.bytes(field, b[:])
	return b[0]
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(field, "bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(field, "bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(field string) string {
	n := d.uvarint(field)
	if d.err != nil {
		return ""
	}
	if n > maxString || n > uint64(len(d.b)) {
		d.fail(field, fmt.Sprintf("length %d over what is left (%d) or %d", n, len(d.b), maxString))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
