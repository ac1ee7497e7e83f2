package queue

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// A record is one event as the log stores it: a single-line JSON object
// whose last member is "crc", the CRC-32C (Castagnoli) of every byte before
// `,"crc":`. The field order is fixed ({seq, time, type, task, attempt, …,
// crc}) so that the same event always gives the same bytes.
//
// The codec is hand-written (encoder below, decoder in scan.go) rather than
// encoding/json because replay decodes every record of the log: a million
// records must replay in well under two seconds. It is still strict: invalid
// JSON, unknown or duplicate members, wrong types, non-canonical numbers and
// invalid UTF-8 are errors.

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
	dst = jsonx.AppendCanonicalString(dst, string(ev.Type))
	if ev.Task != "" {
		dst = append(dst, `,"task":`...)
		dst = jsonx.AppendCanonicalString(dst, ev.Task)
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
		dst = jsonx.AppendCanonicalString(dst, ev.Worker)
	}
	if ev.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = jsonx.AppendCanonicalString(dst, ev.Reason)
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
	if ev.Claim != 0 {
		dst = append(dst, `,"claim":`...)
		dst = strconv.AppendUint(dst, ev.Claim, 10)
	}
	if ev.Batch != 0 {
		dst = append(dst, `,"batch":`...)
		dst = strconv.AppendUint(dst, ev.Batch, 10)
	}
	if ev.Commit {
		dst = append(dst, `,"commit":true`...)
	}
	if len(ev.Manifest) > 0 {
		dst = append(dst, `,"manifest":`...)
		dst = append(dst, ev.Manifest...)
	}
	if len(ev.Run) > 0 {
		dst = append(dst, `,"run":`...)
		dst = append(dst, ev.Run...)
	}
	return dst
}

func appendTrace(dst []byte, t *Trace) []byte {
	dst = append(dst, `{"status":`...)
	dst = jsonx.AppendCanonicalString(dst, string(t.Status))
	dst = append(dst, `,"exit_code":`...)
	dst = strconv.AppendInt(dst, int64(t.ExitCode), 10)
	if t.Signal != "" {
		dst = append(dst, `,"signal":`...)
		dst = jsonx.AppendCanonicalString(dst, t.Signal)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, t.DurationMS, 10)
	dst = append(dst, `,"output_bytes":`...)
	dst = strconv.AppendInt(dst, t.OutputBytes, 10)
	dst = append(dst, `,"output_truncated":`...)
	dst = strconv.AppendBool(dst, t.OutputTruncated)
	dst = append(dst, `,"output_incomplete":`...)
	dst = strconv.AppendBool(dst, t.OutputIncomplete)
	if t.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = jsonx.AppendCanonicalString(dst, t.Reason)
	}
	if t.OutputSaved != nil {
		dst = append(dst, `,"output_saved":`...)
		dst = strconv.AppendBool(dst, *t.OutputSaved)
	}
	if t.OutputError != "" {
		dst = append(dst, `,"output_error":`...)
		dst = jsonx.AppendCanonicalString(dst, t.OutputError)
	}
	if t.Acceptance != nil {
		dst = append(dst, `,"acceptance":`...)
		dst = appendTrace(dst, t.Acceptance)
	}
	return append(dst, '}')
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
	if err := checkCRC(line); err != nil {
		return nil, err
	}
	return decodeEvent(line, true)
}

// RecordSeq checks a record's CRC and reads only its sequence (always the
// first member): what a reader skipping records it has seen needs.
func RecordSeq(line []byte) (uint64, error) {
	if err := checkCRC(line); err != nil {
		return 0, err
	}
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return seqSlow(line)
	}
	end := len(prefix)
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	if end == len(line) || line[end] != ',' {
		return seqSlow(line)
	}
	seq, ok := jsonx.ParseUint(line[len(prefix):end])
	if !ok {
		return seqSlow(line)
	}
	return seq, nil
}

// RecordBatch checks a record's CRC and reads its sequence and batch
// membership only: what a writer verifying a whole log needs. Batch and
// commit precede manifest and run in the encoder's layout, and a JSON
// string cannot hold an unescaped quote, so a batch member is found
// without decoding the record; any other layout is decoded in full.
func RecordBatch(line []byte) (seq, batch uint64, commit bool, err error) {
	seq, err = RecordSeq(line)
	if err != nil {
		return 0, 0, false, err
	}
	i := bytes.Index(line, []byte(`,"batch":`))
	if i < 0 {
		return seq, 0, false, nil
	}
	if m := bytes.Index(line, []byte(`,"manifest":`)); m >= 0 && m < i {
		ev, err := decodeEvent(line, true)
		if err != nil {
			return 0, 0, false, err
		}
		return ev.Seq, ev.Batch, ev.Commit, nil
	}
	j := i + len(`,"batch":`)
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	batch, ok := jsonx.ParseUint(line[j:k])
	if !ok || batch == 0 || batch > seq {
		return 0, 0, false, recordErrorf("batch: want a positive integer, at most the event's seq")
	}
	return seq, batch, bytes.HasPrefix(line[k:], []byte(`,"commit":true`)), nil
}

// seqSlow is RecordSeq for a record not in the encoder's own layout.
func seqSlow(line []byte) (uint64, error) {
	ev, err := decodeEvent(line, true)
	if err != nil {
		return 0, err
	}
	return ev.Seq, nil
}

func checkCRC(line []byte) error {
	n := len(line)
	if n == 0 || line[n-1] != '}' {
		return recordErrorf("incomplete record")
	}
	// The crc member is always last: `,"crc":DIGITS}`.
	j := n - 1
	for j > 0 && line[j-1] >= '0' && line[j-1] <= '9' {
		j--
	}
	i := j - len(crcKey)
	if i < 0 || string(line[i:j]) != crcKey {
		return recordErrorf("no crc member")
	}
	want, ok := jsonx.ParseUint(line[j : n-1])
	if !ok || want > 0xffffffff {
		return recordErrorf("bad crc value")
	}
	if crc32.Checksum(line[:i], castagnoli) != uint32(want) {
		return &RecordError{Why: ErrChecksum.Error(), Err: ErrChecksum}
	}
	return nil
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
	mRun
	mCRC
	mClaim
	mBatch
	mCommit
)

func decodeEvent(data []byte, withCRC bool) (*Event, error) {
	s := getScanner(data)
	defer putScanner(s)
	ev := new(Event)
	var seen int
	err := s.Object(func(key []byte) error {
		bit, err := decodeEventMember(s, ev, key, withCRC)
		if err != nil {
			return err
		}
		if seen&bit != 0 {
			return recordErrorf("duplicate member %q", key)
		}
		seen |= bit
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, asRecordError(err)
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
	case ev.Commit && ev.Batch == 0, ev.Batch > ev.Seq && ev.Seq != 0:
		return nil, recordErrorf("batch: commit without batch, or a batch that starts after its event")
	}
	return ev, nil
}

func decodeEventMember(s *jsonx.Scanner, ev *Event, key []byte, withCRC bool) (int, error) {
	var ok bool
	switch string(key) {
	case "seq":
		ev.Seq, ok = s.Uint()
		return mSeq, want(ok, "seq", "an unsigned integer")
	case "time":
		b, err := s.String()
		if err != nil {
			return 0, recordErrorf("time: want a string")
		}
		if ev.Time, ok = parseTime(b); !ok {
			return 0, recordErrorf("time: not an RFC 3339 time")
		}
		return mTime, nil
	case "type":
		b, err := s.String()
		if err != nil {
			return 0, recordErrorf("type: want a string")
		}
		if ev.Type = eventType(b); ev.Type == "" {
			return 0, recordErrorf("type: unknown event type %q", b)
		}
		return mType, nil
	case "task":
		b, err := s.String()
		ev.Task = string(b)
		return mTask, want(err == nil, "task", "a string")
	case "attempt":
		ev.Attempt, ok = s.Int()
		return mAttempt, want(ok, "attempt", "an integer")
	case "max_attempts":
		ev.MaxAttempts, ok = s.Int()
		return mMaxAttempts, want(ok, "max_attempts", "an integer")
	case "worker":
		b, err := s.String()
		ev.Worker = intern(b)
		return mWorker, want(err == nil, "worker", "a string")
	case "reason":
		b, err := s.String()
		ev.Reason = string(b)
		return mReason, want(err == nil, "reason", "a string")
	case "trace":
		t, ok, err := optTrace(s)
		if !ok {
			return 0, recordErrorf("trace: want an object")
		}
		ev.Trace = t
		return mTrace, err
	case "offset":
		ev.Offset, ok = s.Int64()
		return mOffset, want(ok, "offset", "an integer")
	case "bytes":
		ev.Bytes, ok = s.Int64()
		return mBytes, want(ok, "bytes", "an integer")
	case "through":
		ev.Through, ok = s.Uint()
		return mThrough, want(ok, "through", "an unsigned integer")
	case "claim":
		ev.Claim, ok = s.Uint()
		return mClaim, want(ok && ev.Claim != 0, "claim", "a positive integer")
	case "batch":
		ev.Batch, ok = s.Uint()
		return mBatch, want(ok && ev.Batch != 0, "batch", "a positive integer")
	case "commit":
		ev.Commit, ok = s.Bool()
		return mCommit, want(ok && ev.Commit, "commit", "true")
	case "manifest":
		raw, ok, err := rawObject(s)
		if !ok {
			return 0, recordErrorf("manifest: want an object")
		}
		ev.Manifest = raw
		return mManifest, err
	case "run":
		raw, ok, err := rawObject(s)
		if !ok {
			return 0, recordErrorf("run: want an object")
		}
		ev.Run = raw
		return mRun, err
	case "crc":
		if withCRC {
			_, ok = s.Uint() // checked by DecodeRecord
			return mCRC, want(ok, "crc", "an unsigned integer")
		}
	}
	return 0, recordErrorf("unknown member %q", key)
}

// eventType maps a name to its constant without allocating; "" if unknown.
func eventType(b []byte) EventType {
	switch string(b) {
	case "enqueued":
		return EventEnqueued
	case "started":
		return EventStarted
	case "trace":
		return EventTrace
	case "succeeded":
		return EventSucceeded
	case "failed":
		return EventFailed
	case "cancel_requested":
		return EventCancelRequested
	case "cancelled":
		return EventCancelled
	case "requeued":
		return EventRequeued
	case "retried":
		return EventRetried
	case "truncated":
		return EventTruncated
	case "compacted":
		return EventCompacted
	}
	return ""
}

func traceStatus(b []byte) execx.Status {
	for _, st := range execx.Statuses {
		if string(b) == string(st) {
			return st
		}
	}
	return execx.Status(b) // unknown: kept, and refused by the reducer
}

// intern returns a shared string for values that repeat across many records
// (worker ids, signal names): a small direct-mapped cache, so a million
// started events do not make a million copies of the same few names.
func intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := crc32.Checksum(b, castagnoli) % uint32(len(internCache.s))
	internCache.mu.Lock()
	defer internCache.mu.Unlock()
	if v := internCache.s[h]; v == string(b) {
		return v
	}
	v := string(b)
	internCache.s[h] = v
	return v
}

var internCache struct {
	mu sync.Mutex
	s  [256]string
}

const (
	tStatus = 1 << iota
	tExitCode
	tSignal
	tDuration
	tOutputBytes
	tTruncated
	tIncomplete
	tAcceptance
	tReason
	tOutputSaved
	tOutputError
)

// decodeTrace reads a trace; nested says it is an acceptance record, which
// holds no acceptance of its own.
func decodeTrace(s *jsonx.Scanner) (*Trace, error) { return decodeTraceAt(s, false) }

func decodeTraceAt(s *jsonx.Scanner, nested bool) (*Trace, error) {
	t := new(Trace)
	var seen int
	err := s.Object(func(key []byte) error {
		var bit int
		ok := true
		switch string(key) {
		case "status":
			b, err := s.String()
			t.Status, ok, bit = traceStatus(b), err == nil, tStatus
		case "exit_code":
			t.ExitCode, ok = s.Int()
			bit = tExitCode
		case "signal":
			b, err := s.String()
			t.Signal, ok, bit = intern(b), err == nil, tSignal
		case "duration_ms":
			t.DurationMS, ok = s.Int64()
			bit = tDuration
		case "output_bytes":
			t.OutputBytes, ok = s.Int64()
			bit = tOutputBytes
		case "output_truncated":
			t.OutputTruncated, ok = s.Bool()
			bit = tTruncated
		case "output_incomplete":
			t.OutputIncomplete, ok = s.Bool()
			bit = tIncomplete
		case "reason":
			b, err := s.String()
			t.Reason, ok, bit = string(b), err == nil, tReason
		case "output_saved":
			var saved bool
			saved, ok = s.Bool()
			t.OutputSaved, bit = &saved, tOutputSaved
		case "output_error":
			b, err := s.String()
			t.OutputError, ok, bit = string(b), err == nil && len(b) > 0, tOutputError
		case "acceptance":
			if nested || s.Peek() != '{' {
				return recordErrorf("trace.acceptance: want an object, in a trace only")
			}
			a, err := decodeTraceAt(s, true)
			if err != nil {
				return err
			}
			t.Acceptance, bit = a, tAcceptance
		default:
			return recordErrorf("trace: unknown member %q", key)
		}
		if !ok {
			return recordErrorf("trace.%s: wrong type", key)
		}
		if seen&bit != 0 {
			return recordErrorf("trace: duplicate member %q", key)
		}
		seen |= bit
		return nil
	})
	if err != nil {
		return nil, err
	}
	if seen&tStatus == 0 {
		return nil, recordErrorf("trace: missing status")
	}
	if (t.OutputSaved != nil && !*t.OutputSaved) != (t.OutputError != "") {
		return nil, recordErrorf("trace: output_error comes with output_saved false, and only with it")
	}
	return t, nil
}

func want(ok bool, key, what string) error {
	if ok {
		return nil
	}
	return recordErrorf("%s: want %s", key, what)
}
