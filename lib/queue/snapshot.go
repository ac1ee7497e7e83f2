package queue

import (
	"bufio"
	"bytes"
	"container/heap"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// A snapshot is stored as JSON Lines so that loading one is as fast as
// replaying records (status of a 100,000-task queue must take well under a
// second): a header document, one line per task in enqueue order, and a
// trailer whose crc covers every byte before it. Backends store the bytes
// atomically; the trailer catches a truncated or damaged copy anyway.

// EncodeSnapshot returns the stored form of snap.
func EncodeSnapshot(snap *Snapshot) []byte {
	buf := make([]byte, 0, 128+len(snap.Tasks)*256)
	buf = append(buf, `{"apiVersion":"`+jsonx.APIVersion+`","kind":"`+KindSnapshot+`","seq":`...)
	buf = strconv.AppendUint(buf, snap.Seq, 10)
	buf = append(buf, `,"time":"`...)
	buf = snap.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","tasks":`...)
	buf = strconv.AppendInt(buf, int64(len(snap.Tasks)), 10)
	buf = append(buf, "}\n"...)
	for i := range snap.Tasks {
		buf = appendTaskLine(buf, &snap.Tasks[i])
		buf = append(buf, '\n')
	}
	sum := crc32.Checksum(buf, castagnoli)
	buf = append(buf, `{"end":`...)
	buf = strconv.AppendInt(buf, int64(len(snap.Tasks)), 10)
	buf = append(buf, `,"crc":`...)
	buf = strconv.AppendUint(buf, uint64(sum), 10)
	return append(buf, "}\n"...)
}

func appendTaskLine(dst []byte, t *Task) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendCanonicalString(dst, t.ID)
	dst = append(dst, `,"state":`...)
	dst = jsonx.AppendCanonicalString(dst, string(t.State))
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(t.Attempt), 10)
	dst = append(dst, `,"attempts":`...)
	dst = strconv.AppendInt(dst, int64(t.Attempts), 10)
	dst = append(dst, `,"max_attempts":`...)
	dst = strconv.AppendInt(dst, int64(t.MaxAttempts), 10)
	if t.Worker != "" {
		dst = append(dst, `,"worker":`...)
		dst = jsonx.AppendCanonicalString(dst, t.Worker)
	}
	if t.Claim != 0 {
		dst = append(dst, `,"claim":`...)
		dst = strconv.AppendUint(dst, t.Claim, 10)
	}
	if t.CancelRequested {
		dst = append(dst, `,"cancel_requested":true`...)
	}
	if t.Trace != nil {
		dst = append(dst, `,"trace":`...)
		dst = appendTrace(dst, t.Trace)
	}
	if t.Last != nil {
		dst = append(dst, `,"last":`...)
		dst = appendTrace(dst, t.Last)
		dst = append(dst, `,"last_attempt":`...)
		dst = strconv.AppendInt(dst, int64(t.LastAttempt), 10)
	}
	dst = append(dst, `,"created":"`...)
	dst = t.CreatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","updated":"`...)
	dst = t.UpdatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","enq_seq":`...)
	dst = strconv.AppendUint(dst, t.EnqSeq, 10)
	dst = append(dst, `,"last_seq":`...)
	dst = strconv.AppendUint(dst, t.LastSeq, 10)
	dst = append(dst, `,"manifest":`...)
	dst = append(dst, t.Manifest...)
	if len(t.Run) > 0 {
		dst = append(dst, `,"run":`...)
		dst = append(dst, t.Run...)
	}
	return append(dst, '}')
}

// DecodeSnapshot parses and verifies a stored snapshot.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	return ReadSnapshot(bytes.NewReader(data))
}

// ReadSnapshot streams a stored snapshot from r, verifying it as it goes: a
// snapshot of a large queue is decoded without holding its bytes.
func ReadSnapshot(r io.Reader) (*Snapshot, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	sum := crc32.New(castagnoli)
	var long []byte
	next := func(what string) ([]byte, error) {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull && len(long) <= maxSnapshotLine {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if err == bufio.ErrBufferFull {
				return nil, fmt.Errorf("snapshot: a line longer than any %s", what)
			}
			if err == io.EOF {
				return nil, fmt.Errorf("snapshot is incomplete: no %s", what)
			}
			return nil, fmt.Errorf("read snapshot: %w", err)
		}
		return line, nil
	}
	head, err := next("header")
	if err != nil {
		return nil, err
	}
	sum.Write(head)
	snap := &Snapshot{}
	var n uint64
	var apiOK, kindOK bool // compared as read: a string is valid until the next one
	hs := newScanner(head[:len(head)-1])
	err = hs.Object(func(key []byte) error {
		var err error
		ok := true
		switch string(key) {
		case "apiVersion":
			var b []byte
			b, err = hs.String()
			apiOK = string(b) == jsonx.APIVersion
		case "kind":
			var b []byte
			b, err = hs.String()
			kindOK = string(b) == KindSnapshot
		case "seq":
			snap.Seq, ok = hs.Uint()
		case "time":
			var b []byte
			if b, err = hs.String(); err == nil {
				snap.Time, ok = parseTime(b)
			}
		case "tasks":
			n, ok = hs.Uint()
		default:
			return recordErrorf("unknown member %q", key)
		}
		if err != nil || !ok {
			return recordErrorf("%s: bad value", key)
		}
		return nil
	})
	if err == nil {
		err = hs.End()
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot header: %w", asRecordError(err))
	}
	if !apiOK || !kindOK {
		return nil, fmt.Errorf("snapshot header: not an %s %s document", jsonx.APIVersion, KindSnapshot)
	}
	if n > 1<<32 {
		return nil, fmt.Errorf("snapshot header: bad task count")
	}
	snap.Tasks = make([]Task, 0, min(n, 1<<20))
	for uint64(len(snap.Tasks)) < n {
		line, err := next("task line")
		if err != nil {
			return nil, err
		}
		sum.Write(line)
		snap.Tasks = append(snap.Tasks, Task{})
		if err := decodeTaskLine(line[:len(line)-1], &snap.Tasks[len(snap.Tasks)-1]); err != nil {
			return nil, fmt.Errorf("snapshot task %d: %w", len(snap.Tasks), asRecordError(err))
		}
	}
	trailer, err := next("trailer")
	if err != nil {
		return nil, err
	}
	var end, want uint64
	var haveEnd, haveSum bool
	ts := newScanner(trailer[:len(trailer)-1])
	err = ts.Object(func(key []byte) error {
		var ok bool
		switch string(key) {
		case "end":
			end, ok = ts.Uint()
			haveEnd = ok
		case "crc":
			want, ok = ts.Uint()
			haveSum = ok
		}
		if !ok {
			return recordErrorf("trailer: bad member %q", key)
		}
		return nil
	})
	if err == nil {
		err = ts.End()
	}
	if err != nil || !haveEnd || !haveSum || want > 0xffffffff {
		return nil, fmt.Errorf("snapshot trailer is damaged")
	}
	if sum.Sum32() != uint32(want) {
		return nil, fmt.Errorf("snapshot: %w", ErrChecksum)
	}
	if end != n {
		return nil, fmt.Errorf("snapshot header and trailer disagree on the task count")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("snapshot: data after the trailer")
	}
	return snap, nil
}

// maxSnapshotLine bounds one task line: a manifest at its limit plus the
// task's own fields.
const maxSnapshotLine = MaxManifestBytes + 64<<10

// SnapshotSeq reads only the sequence from the header of a stored snapshot.
func SnapshotSeq(data []byte) (uint64, bool) {
	hi := bytes.IndexByte(data, '\n')
	if hi < 0 {
		return 0, false
	}
	var seq uint64
	found := false
	hs := newScanner(data[:hi])
	err := hs.Object(func(key []byte) error {
		if string(key) == "seq" {
			var ok bool
			seq, ok = hs.Uint()
			found = ok
			if !ok {
				return recordErrorf("seq: bad value")
			}
			return nil
		}
		_, err := hs.Skip(maxDepth)
		return err
	})
	return seq, err == nil && found
}

// The members of a task line, one bit each, to refuse a duplicate.
const (
	tlID uint32 = 1 << iota
	tlState
	tlAttempt
	tlAttempts
	tlMaxAttempts
	tlWorker
	tlCancelRequested
	tlTrace
	tlLast
	tlLastAttempt
	tlCreated
	tlUpdated
	tlEnqSeq
	tlLastSeq
	tlManifest
	tlRun
	tlClaim
)

func decodeTaskLine(line []byte, t *Task) error {
	s := getScanner(line)
	defer putScanner(s)
	var seen uint32
	err := s.Object(func(key []byte) error {
		var bit uint32
		var err error
		ok := true
		switch string(key) {
		case "id":
			var b []byte
			b, err = s.String()
			t.ID, bit = string(b), tlID
		case "state":
			var b []byte
			b, err = s.String()
			t.State, bit = taskState(b), tlState
		case "attempt":
			t.Attempt, ok = s.Int()
			bit = tlAttempt
		case "attempts":
			t.Attempts, ok = s.Int()
			bit = tlAttempts
		case "max_attempts":
			t.MaxAttempts, ok = s.Int()
			bit = tlMaxAttempts
		case "worker":
			var b []byte
			b, err = s.String()
			t.Worker, bit = intern(b), tlWorker
		case "cancel_requested":
			t.CancelRequested, ok = s.Bool()
			bit = tlCancelRequested
		case "trace":
			t.Trace, ok, err = optTrace(s)
			bit = tlTrace
		case "last":
			t.Last, ok, err = optTrace(s)
			bit = tlLast
		case "last_attempt":
			t.LastAttempt, ok = s.Int()
			bit = tlLastAttempt
		case "created", "updated":
			var b []byte
			if b, err = s.String(); err == nil {
				var tm time.Time
				tm, ok = parseTime(b)
				if key[0] == 'c' {
					t.CreatedAt, bit = tm, tlCreated
				} else {
					t.UpdatedAt, bit = tm, tlUpdated
				}
			}
		case "enq_seq":
			t.EnqSeq, ok = s.Uint()
			bit = tlEnqSeq
		case "last_seq":
			t.LastSeq, ok = s.Uint()
			bit = tlLastSeq
		case "manifest":
			t.Manifest, ok, err = rawObject(s)
			bit = tlManifest
		case "run":
			t.Run, ok, err = rawObject(s)
			bit = tlRun
		case "claim":
			t.Claim, ok = s.Uint()
			ok, bit = ok && t.Claim != 0, tlClaim
		default:
			return recordErrorf("unknown member %q", key)
		}
		if err != nil {
			return err
		}
		if !ok {
			return recordErrorf("%s: wrong type", key)
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
	return err
}

func taskState(b []byte) TaskState {
	for _, st := range States {
		if string(b) == string(st) {
			return st
		}
	}
	return TaskState(b)
}

// NewStateFrom rebuilds a State from a snapshot, checking that every task is
// one the reducer could have produced. The state takes ownership of
// snap.Tasks (its tasks live in that slice from then on): callers must not
// use or change snap afterwards.
func NewStateFrom(snap *Snapshot) (*State, error) {
	s := NewState()
	s.Seq = snap.Seq
	s.tasks = make(map[string]*Task, len(snap.Tasks))
	s.order = make([]*Task, 0, len(snap.Tasks))
	for i := range snap.Tasks {
		tp := &snap.Tasks[i]
		if err := validSnapshotTask(tp, snap.Seq); err != nil {
			return nil, fmt.Errorf("snapshot task %q: %w", tp.ID, err)
		}
		if s.tasks[tp.ID] != nil {
			return nil, fmt.Errorf("snapshot task %q appears twice", tp.ID)
		}
		tp.hidx = -1
		s.tasks[tp.ID] = tp
		s.order = append(s.order, tp)
		s.counts[stateIndex(tp.State)]++
		switch tp.State {
		case StateQueued:
			s.queued = append(s.queued, tp)
			tp.hidx = len(s.queued) - 1
		case StateRunning:
			s.running[tp.ID] = tp
		}
	}
	heap.Init(&s.queued)
	return s, nil
}

func validSnapshotTask(t *Task, seq uint64) error {
	switch {
	case t.ID == "":
		return fmt.Errorf("no id")
	case stateIndex(t.State) < 0:
		return fmt.Errorf("unknown state %q", t.State)
	case t.MaxAttempts < 1 || t.Attempt < 1 || t.Attempt > t.MaxAttempts:
		return fmt.Errorf("attempt %d of %d is out of range", t.Attempt, t.MaxAttempts)
	case t.Attempts < 0 || t.Attempts > t.Attempt:
		return fmt.Errorf("attempts %d exceed attempt %d", t.Attempts, t.Attempt)
	case (t.State == StateRunning) != (t.Worker != ""):
		return fmt.Errorf("a worker belongs to a running task only")
	case t.Claim != 0 && (t.State != StateRunning || t.Claim > t.LastSeq):
		return fmt.Errorf("a claim belongs to a running task only, at or before its last event")
	case t.CancelRequested && t.State != StateRunning:
		return fmt.Errorf("a cancel request belongs to a running task only")
	case t.State == StateQueued && t.Trace != nil:
		return fmt.Errorf("a queued task has no trace for its attempt")
	case t.Trace != nil && t.Trace.Outcome() == "", t.Last != nil && t.Last.Outcome() == "":
		return fmt.Errorf("unknown trace status")
	case t.EnqSeq == 0 || t.EnqSeq > t.LastSeq || t.LastSeq > seq:
		return fmt.Errorf("sequences out of order")
	case len(t.Manifest) == 0:
		return fmt.Errorf("no manifest")
	}
	return nil
}

// Snapshot returns a copy of the state for Backend.Compact.
func (s *State) Snapshot(now time.Time) *Snapshot {
	snap := &Snapshot{Seq: s.Seq, Time: now.UTC(), Tasks: make([]Task, len(s.order))}
	for i, t := range s.order {
		snap.Tasks[i] = *t
		snap.Tasks[i].hidx = -1
	}
	return snap
}
