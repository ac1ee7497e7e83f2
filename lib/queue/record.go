package queue

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// A record is one event as the log stores it: a single-line JSON object
// whose last member is "crc", the CRC-32C (Castagnoli) of every byte before
// `,"crc":`. The field order is fixed ({seq, time, type, task, attempt, …,
// crc}) so that the same event always gives the same bytes.
//
// The codec is hand-written on top of gjson rather than encoding/json because
// replay decodes every record of the log: a million records must replay in
// well under two seconds. It is still strict: unknown or duplicate members,
// wrong types, non-canonical numbers and invalid UTF-8 are errors.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChecksum means a record's bytes do not match its CRC.
var ErrChecksum = errors.New("checksum mismatch")

const crcKey = `,"crc":`

// AppendRecord appends ev as a record (without a newline) to dst.
func AppendRecord(dst []byte, ev *Event) []byte {
	start := len(dst)
	dst = append(dst, '{')
	dst = appendEventBody(dst, ev)
	sum := crc32.Checksum(dst[start:], castagnoli)
	dst = append(dst, crcKey...)
	dst = strconv.AppendUint(dst, uint64(sum), 10)
	return append(dst, '}')
}

// AppendEventDoc appends ev as a QueueEvent document (the `artq log` form:
// apiVersion and kind, no crc) to dst, without a newline.
func AppendEventDoc(dst []byte, ev *Event) []byte {
	dst = append(dst, `{"apiVersion":"`+jsonx.APIVersion+`","kind":"`+KindEvent+`",`...)
	dst = appendEventBody(dst, ev)
	return append(dst, '}')
}

func appendEventBody(dst []byte, ev *Event) []byte {
	dst = append(dst, `"seq":`...)
	dst = strconv.AppendUint(dst, ev.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = ev.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","type":`...)
	dst = appendString(dst, string(ev.Type))
	if ev.Task != "" {
		dst = append(dst, `,"task":`...)
		dst = appendString(dst, ev.Task)
	}
	if ev.Attempt != 0 {
		dst = append(dst, `,"attempt":`...)
		dst = strconv.AppendInt(dst, int64(ev.Attempt), 10)
	}
	if ev.MaxAttempts != 0 {
		dst = append(dst, `,"max_attempts":`...)
		dst = strconv.AppendInt(dst, int64(ev.MaxAttempts), 10)
	}
	if ev.Worker != "" {
		dst = append(dst, `,"worker":`...)
		dst = appendString(dst, ev.Worker)
	}
	if ev.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, ev.Reason)
	}
	if ev.Trace != nil {
		dst = append(dst, `,"trace":`...)
		dst = appendTrace(dst, ev.Trace)
	}
	if ev.Offset != 0 {
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, ev.Offset, 10)
	}
	if ev.Bytes != 0 {
		dst = append(dst, `,"bytes":`...)
		dst = strconv.AppendInt(dst, ev.Bytes, 10)
	}
	if ev.Through != 0 {
		dst = append(dst, `,"through":`...)
		dst = strconv.AppendUint(dst, ev.Through, 10)
	}
	if len(ev.Manifest) > 0 {
		dst = append(dst, `,"manifest":`...)
		dst = append(dst, ev.Manifest...)
	}
	return dst
}

func appendTrace(dst []byte, t *Trace) []byte {
	dst = append(dst, `{"status":`...)
	dst = appendString(dst, string(t.Status))
	dst = append(dst, `,"exit_code":`...)
	dst = strconv.AppendInt(dst, int64(t.ExitCode), 10)
	if t.Signal != "" {
		dst = append(dst, `,"signal":`...)
		dst = appendString(dst, t.Signal)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, t.DurationMS, 10)
	dst = append(dst, `,"output_bytes":`...)
	dst = strconv.AppendInt(dst, t.OutputBytes, 10)
	dst = append(dst, `,"output_truncated":`...)
	dst = strconv.AppendBool(dst, t.OutputTruncated)
	dst = append(dst, `,"output_incomplete":`...)
	dst = strconv.AppendBool(dst, t.OutputIncomplete)
	return append(dst, '}')
}

// appendString appends s as a JSON string, escaping only what JSON requires
// (no HTML escaping, as jsonx.Marshal). Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				const hex = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// RecordError is a record that cannot be decoded.
type RecordError struct {
	Why string
	Err error // ErrChecksum, or nil
}

func (e *RecordError) Error() string { return e.Why }

// Unwrap lets callers test errors.Is(err, ErrChecksum).
func (e *RecordError) Unwrap() error { return e.Err }

func recordErrorf(format string, args ...any) error {
	return &RecordError{Why: fmt.Sprintf(format, args...)}
}

// DecodeRecord decodes one record (without its newline), checking its CRC
// first.
func DecodeRecord(line []byte) (*Event, error) {
	if len(line) == 0 || line[len(line)-1] != '}' {
		return nil, recordErrorf("incomplete record")
	}
	i := bytes.LastIndex(line, []byte(crcKey))
	if i < 0 {
		return nil, recordErrorf("no crc member")
	}
	want, ok := parseUint(line[i+len(crcKey) : len(line)-1])
	if !ok || want > 0xffffffff {
		return nil, recordErrorf("bad crc value")
	}
	if crc32.Checksum(line[:i], castagnoli) != uint32(want) {
		return nil, &RecordError{Why: ErrChecksum.Error(), Err: ErrChecksum}
	}
	return decodeEvent(line, true)
}

// member bits, to refuse duplicate keys.
const (
	mSeq = 1 << iota
	mTime
	mType
	mTask
	mAttempt
	mMaxAttempts
	mWorker
	mReason
	mTrace
	mOffset
	mBytes
	mThrough
	mManifest
	mCRC
)

func decodeEvent(data []byte, withCRC bool) (*Event, error) {
	if !gjson.ValidBytes(data) {
		return nil, recordErrorf("not valid JSON")
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil, recordErrorf("not a JSON object")
	}
	ev := new(Event)
	var seen int
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		bit, ferr := decodeEventMember(ev, k.Str, v, withCRC)
		if ferr != nil {
			err = ferr
			return false
		}
		if seen&bit != 0 {
			err = recordErrorf("duplicate member %q", k.Str)
			return false
		}
		seen |= bit
		return true
	})
	if err != nil {
		return nil, err
	}
	switch {
	case seen&mSeq == 0:
		return nil, recordErrorf("missing seq")
	case seen&mTime == 0:
		return nil, recordErrorf("missing time")
	case seen&mType == 0:
		return nil, recordErrorf("missing type")
	case withCRC && seen&mCRC == 0:
		return nil, recordErrorf("missing crc")
	}
	return ev, nil
}

func decodeEventMember(ev *Event, key string, v gjson.Result, withCRC bool) (int, error) {
	var ok bool
	switch key {
	case "seq":
		ev.Seq, ok = uintValue(v)
		return mSeq, want(ok, key, "an unsigned integer")
	case "time":
		var s string
		if s, ok = stringValue(v); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return 0, recordErrorf("time: not an RFC 3339 time")
			}
			ev.Time = t.UTC()
		}
		return mTime, want(ok, key, "a string")
	case "type":
		var s string
		s, ok = stringValue(v)
		if ok && !EventType(s).known() {
			return 0, recordErrorf("type: unknown event type %q", s)
		}
		ev.Type = EventType(s)
		return mType, want(ok, key, "a string")
	case "task":
		ev.Task, ok = stringValue(v)
		return mTask, want(ok, key, "a string")
	case "attempt":
		ev.Attempt, ok = intValue(v)
		return mAttempt, want(ok, key, "an integer")
	case "max_attempts":
		ev.MaxAttempts, ok = intValue(v)
		return mMaxAttempts, want(ok, key, "an integer")
	case "worker":
		ev.Worker, ok = stringValue(v)
		return mWorker, want(ok, key, "a string")
	case "reason":
		ev.Reason, ok = stringValue(v)
		return mReason, want(ok, key, "a string")
	case "trace":
		if !v.IsObject() {
			return 0, recordErrorf("trace: want an object")
		}
		t, err := decodeTrace(v)
		if err != nil {
			return 0, err
		}
		ev.Trace = t
		return mTrace, nil
	case "offset":
		var n int64
		n, ok = int64Value(v)
		ev.Offset = n
		return mOffset, want(ok, key, "an integer")
	case "bytes":
		var n int64
		n, ok = int64Value(v)
		ev.Bytes = n
		return mBytes, want(ok, key, "an integer")
	case "through":
		ev.Through, ok = uintValue(v)
		return mThrough, want(ok, key, "an unsigned integer")
	case "manifest":
		if !v.IsObject() {
			return 0, recordErrorf("manifest: want an object")
		}
		ev.Manifest = []byte(v.Raw)
		return mManifest, nil
	case "crc":
		if withCRC {
			return mCRC, nil // checked by DecodeRecord
		}
	}
	return 0, recordErrorf("unknown member %q", key)
}

const (
	tStatus = 1 << iota
	tExitCode
	tSignal
	tDuration
	tOutputBytes
	tTruncated
	tIncomplete
)

func decodeTrace(obj gjson.Result) (*Trace, error) {
	t := new(Trace)
	var seen int
	var err error
	obj.ForEach(func(k, v gjson.Result) bool {
		var bit int
		ok := true
		switch k.Str {
		case "status":
			var s string
			s, ok = stringValue(v)
			t.Status, bit = execx.Status(s), tStatus
		case "exit_code":
			t.ExitCode, ok = intValue(v)
			bit = tExitCode
		case "signal":
			t.Signal, ok = stringValue(v)
			bit = tSignal
		case "duration_ms":
			t.DurationMS, ok = int64Value(v)
			bit = tDuration
		case "output_bytes":
			t.OutputBytes, ok = int64Value(v)
			bit = tOutputBytes
		case "output_truncated":
			t.OutputTruncated, ok = boolValue(v)
			bit = tTruncated
		case "output_incomplete":
			t.OutputIncomplete, ok = boolValue(v)
			bit = tIncomplete
		default:
			err = recordErrorf("trace: unknown member %q", k.Str)
			return false
		}
		if !ok {
			err = recordErrorf("trace.%s: wrong type", k.Str)
			return false
		}
		if seen&bit != 0 {
			err = recordErrorf("trace: duplicate member %q", k.Str)
			return false
		}
		seen |= bit
		return true
	})
	if err != nil {
		return nil, err
	}
	if seen&tStatus == 0 {
		return nil, recordErrorf("trace: missing status")
	}
	return t, nil
}

func want(ok bool, key, what string) error {
	if ok {
		return nil
	}
	return recordErrorf("%s: want %s", key, what)
}

func stringValue(v gjson.Result) (string, bool) {
	if v.Type != gjson.String || !utf8.ValidString(v.Str) {
		return "", false
	}
	return v.Str, true
}

func boolValue(v gjson.Result) (bool, bool) {
	switch v.Type {
	case gjson.True:
		return true, true
	case gjson.False:
		return false, true
	}
	return false, false
}

func uintValue(v gjson.Result) (uint64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	return parseUint([]byte(v.Raw))
}

func int64Value(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	raw := []byte(v.Raw)
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	u, ok := parseUint(raw)
	if !ok || u > 1<<63-1 || (neg && u == 0) {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

func intValue(v gjson.Result) (int, bool) {
	n, ok := int64Value(v)
	if !ok || n != int64(int(n)) || n > 1<<31-1 || n < -(1<<31) {
		return 0, false
	}
	return int(n), true
}

// parseUint accepts only canonical decimal: digits, no sign, no leading zero,
// no fraction or exponent, no overflow. Anything else would make two byte
// strings mean one event.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
