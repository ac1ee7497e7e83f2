package otlpwire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func sample() Span {
	return Span{
		TraceID: [16]byte{1, 2, 3}, SpanID: [8]byte{4}, Parent: [8]byte{5}, RemoteParent: true, Sampled: true,
		TraceState: "k=v", Name: "artq.run", Kind: 5, Start: 1_700_000_000_000_000_000, End: 1_700_000_000_000_000_123,
		StatusCode: 1, StatusText: "failed",
		Attrs: []Attr{
			{Key: "artq.task.id", Type: AttrString, Str: "t1"},
			{Key: "process.exit.code", Type: AttrInt, Int: -1},
			{Key: "artq.timed_out", Type: AttrBool, Bool: true},
			{Key: "ratio", Type: AttrFloat, Float: 0.5},
		},
	}
}

func TestSpanRoundTrip(t *testing.T) {
	s := sample()
	got, err := DecodeSpan(AppendSpan(nil, &s))
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("DecodeSpan(AppendSpan(s)) = %+v, %v; want %+v", got, err, s)
	}
}

func TestDecodeSpanRefuses(t *testing.T) {
	s := sample()
	good := AppendSpan(nil, &s)
	zero := s
	zero.TraceID = [16]byte{}
	backwards := s
	backwards.End = s.Start - 1
	for name, tc := range map[string]struct {
		b     []byte
		field string
	}{
		"truncated": {good[:len(good)-1], "attr.ratio"},
		"trailing":  {append(append([]byte{}, good...), 0), "span"},
		"zero id":   {AppendSpan(nil, &zero), "trace_id"},
		"backwards": {AppendSpan(nil, &backwards), "end"},
		"flags":     {func() []byte { b := append([]byte{}, good...); b[32] = 4; return b }(), "flags"},
		"empty":     {nil, "trace_id"},
	} {
		_, err := DecodeSpan(tc.b)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v; want a FieldError on %s", name, err, tc.field)
		}
	}
}

func TestReader(t *testing.T) {
	s := sample()
	stream := []byte(Magic)
	stream = AppendFrame(stream, KindLog, []byte(`{"a":1}`))
	stream = AppendFrame(stream, KindSpan, AppendSpan(nil, &s))
	r := NewReader(bytes.NewReader(stream))
	k, p, err := r.Next()
	if err != nil || k != KindLog || string(p) != `{"a":1}` {
		t.Fatalf("first frame %q %q %v", k, p, err)
	}
	k, p, err = r.Next()
	if err != nil || k != KindSpan {
		t.Fatalf("second frame %q %v", k, err)
	}
	if got, err := DecodeSpan(p); err != nil || got.Name != s.Name {
		t.Fatalf("span %+v %v", got, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v; want EOF", err)
	}
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"no magic":  {[]byte("ARTOTLP2\nL\x00"), ErrMagic},
		"cut":       {stream[:len(stream)-1], io.ErrUnexpectedEOF},
		"bad kind":  {[]byte(Magic + "X\x00"), ErrFrame},
		"too large": {append([]byte(Magic+"L"), 0xff, 0xff, 0xff, 0xff, 0x0f), ErrFrame},
	} {
		r := NewReader(bytes.NewReader(tc.b))
		var err error
		for err == nil {
			_, _, err = r.Next()
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", name, err, tc.want)
		}
	}
}

// FuzzDecode: any stream is read without panic or unbounded allocation,
// and a span that decodes survives a re-encoding unchanged.
func FuzzDecode(f *testing.F) {
	s := sample()
	f.Add(AppendFrame([]byte(Magic), KindSpan, AppendSpan(nil, &s)))
	f.Add(AppendFrame([]byte(Magic), KindLog, []byte(`{}`)))
	f.Add([]byte(Magic + "S\x03abc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for {
			k, p, err := r.Next()
			if err != nil {
				return
			}
			if k != KindSpan {
				continue
			}
			sp, err := DecodeSpan(p)
			if err != nil {
				continue
			}
			again, err := DecodeSpan(AppendSpan(nil, &sp))
			if err != nil || !reflect.DeepEqual(again, sp) {
				t.Fatalf("span %+v re-reads as %+v, %v", sp, again, err)
			}
		}
	})
}
