package queue

import (
	"bytes"
	"container/heap"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

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
	dst = appendString(dst, t.ID)
	dst = append(dst, `,"state":`...)
	dst = appendString(dst, string(t.State))
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(t.Attempt), 10)
	dst = append(dst, `,"attempts":`...)
	dst = strconv.AppendInt(dst, int64(t.Attempts), 10)
	dst = append(dst, `,"max_attempts":`...)
	dst = strconv.AppendInt(dst, int64(t.MaxAttempts), 10)
	if t.Worker != "" {
		dst = append(dst, `,"worker":`...)
		dst = appendString(dst, t.Worker)
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
	return append(dst, '}')
}

// DecodeSnapshot parses and verifies a stored snapshot.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("snapshot is incomplete")
	}
	body := data[:len(data)-1]
	ti := bytes.LastIndexByte(body, '\n')
	if ti < 0 {
		return nil, fmt.Errorf("snapshot has no trailer")
	}
	trailer := gjson.ParseBytes(body[ti+1:])
	if !gjson.ValidBytes(body[ti+1:]) || !trailer.IsObject() {
		return nil, fmt.Errorf("snapshot trailer is not a JSON object")
	}
	want, ok := uintValue(trailer.Get("crc"))
	if !ok || want > 0xffffffff {
		return nil, fmt.Errorf("snapshot trailer has no crc")
	}
	if crc32.Checksum(data[:ti+1], castagnoli) != uint32(want) {
		return nil, fmt.Errorf("snapshot: %w", ErrChecksum)
	}
	end, ok := uintValue(trailer.Get("end"))
	if !ok {
		return nil, fmt.Errorf("snapshot trailer has no task count")
	}
	hi := bytes.IndexByte(data, '\n')
	head := data[:hi]
	if !gjson.ValidBytes(head) {
		return nil, fmt.Errorf("snapshot header is not valid JSON")
	}
	h := gjson.ParseBytes(head)
	if h.Get("apiVersion").Str != jsonx.APIVersion || h.Get("kind").Str != KindSnapshot {
		return nil, fmt.Errorf("snapshot header: not an %s %s document", jsonx.APIVersion, KindSnapshot)
	}
	snap := &Snapshot{}
	if snap.Seq, ok = uintValue(h.Get("seq")); !ok {
		return nil, fmt.Errorf("snapshot header: bad seq")
	}
	ts, _ := stringValue(h.Get("time"))
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, fmt.Errorf("snapshot header: bad time")
	}
	snap.Time = t.UTC()
	n, ok := uintValue(h.Get("tasks"))
	if !ok || n != end {
		return nil, fmt.Errorf("snapshot header and trailer disagree on the task count")
	}
	if n > uint64(len(data)) {
		return nil, fmt.Errorf("snapshot header: bad task count")
	}
	snap.Tasks = make([]Task, 0, n)
	rest := data[hi+1 : ti+1]
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		line := rest[:nl]
		rest = rest[nl+1:]
		var task Task
		if err := decodeTaskLine(line, &task); err != nil {
			return nil, fmt.Errorf("snapshot task %d: %w", len(snap.Tasks)+1, err)
		}
		snap.Tasks = append(snap.Tasks, task)
	}
	if uint64(len(snap.Tasks)) != n {
		return nil, fmt.Errorf("snapshot holds %d tasks, header says %d", len(snap.Tasks), n)
	}
	return snap, nil
}

// SnapshotSeq reads only the header of a stored snapshot.
func SnapshotSeq(data []byte) (uint64, bool) {
	hi := bytes.IndexByte(data, '\n')
	if hi < 0 {
		return 0, false
	}
	return uintValue(gjson.GetBytes(data[:hi], "seq"))
}

func decodeTaskLine(line []byte, t *Task) error {
	if !gjson.ValidBytes(line) {
		return recordErrorf("not valid JSON")
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return recordErrorf("not a JSON object")
	}
	seen := map[string]bool{}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] {
			err = recordErrorf("duplicate member %q", k.Str)
			return false
		}
		seen[k.Str] = true
		ok := true
		switch k.Str {
		case "id":
			t.ID, ok = stringValue(v)
		case "state":
			var s string
			s, ok = stringValue(v)
			t.State = TaskState(s)
		case "attempt":
			t.Attempt, ok = intValue(v)
		case "attempts":
			t.Attempts, ok = intValue(v)
		case "max_attempts":
			t.MaxAttempts, ok = intValue(v)
		case "worker":
			t.Worker, ok = stringValue(v)
		case "cancel_requested":
			t.CancelRequested, ok = boolValue(v)
		case "trace", "last":
			if !v.IsObject() {
				ok = false
				break
			}
			tr, terr := decodeTrace(v)
			if terr != nil {
				err = terr
				return false
			}
			if k.Str == "trace" {
				t.Trace = tr
			} else {
				t.Last = tr
			}
		case "last_attempt":
			t.LastAttempt, ok = intValue(v)
		case "created", "updated":
			var s string
			if s, ok = stringValue(v); ok {
				tm, perr := time.Parse(time.RFC3339Nano, s)
				ok = perr == nil
				if k.Str == "created" {
					t.CreatedAt = tm.UTC()
				} else {
					t.UpdatedAt = tm.UTC()
				}
			}
		case "enq_seq":
			t.EnqSeq, ok = uintValue(v)
		case "last_seq":
			t.LastSeq, ok = uintValue(v)
		case "manifest":
			ok = v.IsObject()
			t.Manifest = []byte(v.Raw)
		default:
			err = recordErrorf("unknown member %q", k.Str)
			return false
		}
		if !ok {
			err = recordErrorf("%s: wrong type", k.Str)
			return false
		}
		return true
	})
	return err
}

// NewStateFrom rebuilds a State from a snapshot, checking that every task is
// one the reducer could have produced.
func NewStateFrom(snap *Snapshot) (*State, error) {
	s := NewState()
	s.Seq = snap.Seq
	s.order = make([]*Task, 0, len(snap.Tasks))
	for i := range snap.Tasks {
		t := snap.Tasks[i] // copy: the state owns its tasks
		if err := validSnapshotTask(&t, snap.Seq); err != nil {
			return nil, fmt.Errorf("snapshot task %q: %w", t.ID, err)
		}
		if s.tasks[t.ID] != nil {
			return nil, fmt.Errorf("snapshot task %q appears twice", t.ID)
		}
		tp := &t
		tp.hidx = -1
		s.tasks[t.ID] = tp
		s.order = append(s.order, tp)
		s.counts[t.State.index()]++
		switch t.State {
		case StateQueued:
			s.queued = append(s.queued, tp)
			tp.hidx = len(s.queued) - 1
		case StateRunning:
			s.running[t.ID] = tp
		}
	}
	heap.Init(&s.queued)
	return s, nil
}

func validSnapshotTask(t *Task, seq uint64) error {
	switch {
	case t.ID == "":
		return fmt.Errorf("no id")
	case t.State.index() < 0:
		return fmt.Errorf("unknown state %q", t.State)
	case t.MaxAttempts < 1 || t.Attempt < 1 || t.Attempt > t.MaxAttempts:
		return fmt.Errorf("attempt %d of %d is out of range", t.Attempt, t.MaxAttempts)
	case t.Attempts < 0 || t.Attempts > t.Attempt:
		return fmt.Errorf("attempts %d exceed attempt %d", t.Attempts, t.Attempt)
	case (t.State == StateRunning) != (t.Worker != ""):
		return fmt.Errorf("a worker belongs to a running task only")
	case t.CancelRequested && t.State != StateRunning:
		return fmt.Errorf("a cancel request belongs to a running task only")
	case t.State == StateQueued && t.Trace != nil:
		return fmt.Errorf("a queued task has no trace for its attempt")
	case t.Trace != nil && Outcome(t.Trace.Status) == "", t.Last != nil && Outcome(t.Last.Status) == "":
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
