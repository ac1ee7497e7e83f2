package goal

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// fakeSources is a queue and a sink in memory; it counts what it was asked.
type fakeSources struct {
	tasks  map[string]TaskState
	events map[string]SinkCheck
	broken map[string]error // event id → the error Event returns
	asked  []string
}

var queueTime = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func newFakeSources() *fakeSources {
	return &fakeSources{
		tasks: map[string]TaskState{"built": "succeeded", "flaky": "failed", "nap": "cancelled", "slow": "running", "later": "queued"},
		events: map[string]SinkCheck{"sha256:" + hex64('e'): {
			Path: "/var/art/events.jsonl", Line: 3, Subject: "task/built", Type: "task.finished", Seq: 2, Time: queueTime,
		}},
		broken: map[string]error{"sha256:" + hex64('f'): exitcode.Errorf(exitcode.Internal, "event sha256:fff…: line 9: corrupt record")},
	}
}

func (f *fakeSources) Task(id string) (TaskState, QueueCheck, error) {
	f.asked = append(f.asked, "task:"+id)
	st, ok := f.tasks[id]
	if !ok {
		return "", QueueCheck{}, exitcode.Errorf(exitcode.NotFound, "task %s: not in queue /var/art/queues/default", id)
	}
	return st, QueueCheck{Dir: "/var/art/queues/default", Seq: 17, Attempts: 1, UpdatedAt: queueTime}, nil
}

func (f *fakeSources) Event(id string) (SinkCheck, error) {
	f.asked = append(f.asked, "event:"+id)
	if err, ok := f.broken[id]; ok {
		return SinkCheck{}, err
	}
	sc, ok := f.events[id]
	if !ok {
		return SinkCheck{}, exitcode.Errorf(exitcode.NotFound, "event %s: not in /var/art/events.jsonl", id)
	}
	return sc, nil
}

func TestVerifyEvidence(t *testing.T) {
	goodEvent := "sha256:" + hex64('e')
	forged := &QueueCheck{Dir: "/forged", Seq: 99, Attempts: 9, UpdatedAt: queueTime}
	tests := []struct {
		name string
		in   Evidence
		want string // the evidence's JSON after, or "!code:substring"
		hint string
	}{
		{"state read from the queue", Evidence{Type: EvidenceTask, Task: "built"},
			`{"type":"task","task":"built","state":"succeeded","from_queue":{"dir":"/var/art/queues/default","seq":17,"attempts":1,"updated_at":"2026-01-02T03:00:00Z"},"recorded_at":"0001-01-01T00:00:00Z"}`, ""},
		{"given state matches", Evidence{Type: EvidenceTask, Task: "flaky", State: "failed"},
			`{"type":"task","task":"flaky","state":"failed","from_queue":{"dir":"/var/art/queues/default","seq":17,"attempts":1,"updated_at":"2026-01-02T03:00:00Z"},"recorded_at":"0001-01-01T00:00:00Z"}`, ""},
		{"cancelled is finished", Evidence{Type: EvidenceTask, Task: "nap"}, `"state":"cancelled"`, ""},
		{"a caller's from_queue is replaced", Evidence{Type: EvidenceTask, Task: "built", FromQueue: forged},
			`"from_queue":{"dir":"/var/art/queues/default","seq":17,`, ""},
		{"running", Evidence{Type: EvidenceTask, Task: "slow"}, "!3:task slow is running in queue /var/art/queues/default: task not finished", "artq status slow --watch"},
		{"queued", Evidence{Type: EvidenceTask, Task: "later", State: "queued"}, "!3:task later is queued", ""},
		{"given state differs", Evidence{Type: EvidenceTask, Task: "flaky", State: "succeeded"},
			"!3:task flaky: given as succeeded, but the queue /var/art/queues/default holds it failed: state differs", ""},
		{"unknown task", Evidence{Type: EvidenceTask, Task: "ghost"}, "!4:task ghost: not in queue", ""},
		{"event found", Evidence{Type: EvidenceEvent, Event: goodEvent},
			`{"type":"event","event":"` + goodEvent + `","from_sink":{"path":"/var/art/events.jsonl","line":3,"subject":"task/built","type":"task.finished","seq":2,"time":"2026-01-02T03:00:00Z"},"recorded_at":"0001-01-01T00:00:00Z"}`, ""},
		{"unknown event", Evidence{Type: EvidenceEvent, Event: "sha256:" + hex64('0')}, "!4:not in /var/art/events.jsonl", ""},
		{"record does not verify", Evidence{Type: EvidenceEvent, Event: "sha256:" + hex64('f')}, "!125:corrupt record", ""},
		{"other types are not looked up", note("n"), `{"type":"note","text":"n","recorded_at":"0001-01-01T00:00:00Z"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSources()
			e := tt.in.Clone()
			err := VerifyEvidence(&e, src)
			if code, msg, ok := strings.Cut(strings.TrimPrefix(tt.want, "!"), ":"); strings.HasPrefix(tt.want, "!") && ok {
				if err == nil {
					t.Fatalf("accepted: %+v", e)
				}
				if fmt.Sprint(exitcode.Of(err)) != code || !strings.Contains(err.Error(), msg) {
					t.Errorf("err = %v (exit %d); want exit %s mentioning %q", err, exitcode.Of(err), code, msg)
				}
				var h interface{ Hint() string }
				if tt.hint != "" && (!errors.As(err, &h) || !strings.Contains(h.Hint(), tt.hint)) {
					t.Errorf("err %v has no hint mentioning %q", err, tt.hint)
				}
				if e.FromQueue != tt.in.FromQueue || e.FromSink != nil || e.State != tt.in.State {
					t.Errorf("a refused check changed the evidence: %+v", e)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := jsonx.Marshal(e)
			if !strings.Contains(string(got), tt.want) {
				t.Errorf("got\n %s\nwant it to contain\n %s", got, tt.want)
			}
			if tt.in.Type == EvidenceNote && len(src.asked) != 0 {
				t.Errorf("note evidence asked the sources %v", src.asked)
			}
			// What verification records is a valid journal entry.
			e.RecordedAt = queueTime
			if err := e.validate("e"); err != nil {
				t.Errorf("verified evidence does not validate: %v", err)
			}
		})
	}
}

// TestStoreSources: with Sources set, every mutation verifies exactly the
// task and event evidence it appends; a refusal writes nothing.
func TestStoreSources(t *testing.T) {
	ok := must[*Journal](t)
	newGoal := func(t *testing.T) (*Store, *fakeSources, *Journal) {
		s, _ := testStore(t)
		src := newFakeSources()
		s.Sources = src
		j := ok(New("g", "Ship", nil, []string{"built", "docs"}, s.Now()))
		return s, src, ok(s.Create(j))
	}

	t.Run("check records the queue's state", func(t *testing.T) {
		s, src, j := newGoal(t)
		j = ok(s.Check("g", j.Revision, "c0", Evidence{Type: EvidenceTask, Task: "built"}))
		e := j.Checklist[0].Evidence[0]
		if e.State != "succeeded" || e.FromQueue == nil || e.FromQueue.Seq != 17 || e.RecordedAt.IsZero() {
			t.Errorf("stored %+v", e)
		}
		if got := strings.Join(src.asked, " "); got != "task:built" {
			t.Errorf("asked %q", got)
		}
		stored := ok(s.Get("g"))
		if stored.Checklist[0].Evidence[0].FromQueue.Dir != "/var/art/queues/default" {
			t.Errorf("the file lost from_queue: %+v", stored.Checklist[0].Evidence[0])
		}
	})

	t.Run("a refusal writes nothing", func(t *testing.T) {
		for _, evs := range [][]Evidence{
			{{Type: EvidenceTask, Task: "slow"}},
			{note("fine"), {Type: EvidenceTask, Task: "flaky", State: "succeeded"}},
			{{Type: EvidenceEvent, Event: "sha256:" + hex64('e')}, {Type: EvidenceEvent, Event: "sha256:" + hex64('0')}},
		} {
			s, _, j := newGoal(t)
			before := readBytes(t, s.Path("g"))
			_, err := s.Seal("g", j.Revision, "framed", evs)
			if err == nil || (exitcode.Of(err) != exitcode.Conflict && exitcode.Of(err) != exitcode.NotFound) {
				t.Fatalf("seal %v: err %v", evs, err)
			}
			if !strings.Contains(err.Error(), "goal g: receipts.frame.evidence[") {
				t.Errorf("err %q does not name the evidence's place", err)
			}
			if !bytes.Equal(before, readBytes(t, s.Path("g"))) {
				t.Errorf("seal %v: refused, but the journal changed", evs)
			}
		}
	})

	t.Run("malformed evidence is invalid before the queue is asked", func(t *testing.T) {
		s, src, j := newGoal(t)
		_, err := s.Check("g", j.Revision, "c0", Evidence{Type: EvidenceTask, Task: "built", State: "done"})
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), `journal.checklist[0].evidence[0].state: "done" is not a task state`) {
			t.Errorf("err = %v", err)
		}
		_, err = s.Check("g", j.Revision, "c0", Evidence{Type: EvidenceEvent, Event: "sha256:x"})
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("bad event id: %v", err)
		}
		if len(src.asked) != 0 {
			t.Errorf("asked %v about malformed evidence", src.asked)
		}
	})

	t.Run("put verifies only what it appends", func(t *testing.T) {
		s, src, j := newGoal(t)
		// An older journal's evidence, recorded unverified and not
		// finished, stays as it was: it is history, not this step's claim.
		s.Sources = nil
		j = ok(s.Check("g", j.Revision, "c1", Evidence{Type: EvidenceTask, Task: "slow", State: "running"}))
		s.Sources = src
		doc := j.Clone()
		doc.Checklist[0].Evidence = append(doc.Checklist[0].Evidence,
			Evidence{Type: EvidenceTask, Task: "built", FromQueue: &QueueCheck{Dir: "/forged", Seq: 1, UpdatedAt: queueTime}},
			Evidence{Type: EvidenceEvent, Event: "sha256:" + hex64('e')})
		j = ok(s.Put("g", j.Revision, doc))
		if got := strings.Join(src.asked, " "); got != "task:built event:sha256:"+hex64('e') {
			t.Errorf("asked %q; want only the two appended pieces", got)
		}
		if e := j.Checklist[0].Evidence[0]; e.FromQueue.Dir != "/var/art/queues/default" || e.State != "succeeded" {
			t.Errorf("the put's forged from_queue survived: %+v", e.FromQueue)
		}
		if e := j.Checklist[0].Evidence[1]; e.FromSink == nil || e.FromSink.Type != "task.finished" {
			t.Errorf("event evidence %+v", e)
		}
		if e := j.Checklist[1].Evidence[0]; e.State != "running" || e.FromQueue != nil {
			t.Errorf("history was re-verified: %+v", e)
		}
	})

	t.Run("without sources evidence is recorded as given", func(t *testing.T) {
		s, _ := testStore(t)
		j := ok(s.Create(ok(New("g", "Ship", nil, []string{"x"}, s.Now()))))
		j = ok(s.Check("g", j.Revision, "0", Evidence{Type: EvidenceTask, Task: "anything", State: "queued"}))
		if e := j.Checklist[0].Evidence[0]; e.FromQueue != nil || e.State != "queued" {
			t.Errorf("%+v", e)
		}
		// task:ID without a state cannot be recorded without a queue to read.
		_, err := s.Check("g", j.Revision, "0", Evidence{Type: EvidenceTask, Task: "anything"})
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "state") {
			t.Errorf("stateless task evidence without sources: %v", err)
		}
	})
}

func TestVerifiedEvidenceRules(t *testing.T) {
	qc := func(edit func(*QueueCheck)) *QueueCheck {
		c := QueueCheck{Dir: "/q", Seq: 1, Attempts: 0, UpdatedAt: queueTime}
		edit(&c)
		return &c
	}
	sc := func(edit func(*SinkCheck)) *SinkCheck {
		c := SinkCheck{Path: "/e.jsonl", Line: 1, Subject: "s", Type: "t", Seq: 1, Time: queueTime}
		edit(&c)
		return &c
	}
	ev := "sha256:" + hex64('a')
	tests := []struct {
		e    Evidence
		want string // "" for valid
	}{
		{Evidence{Type: EvidenceTask, Task: "t", State: "succeeded", FromQueue: qc(func(*QueueCheck) {})}, ""},
		{Evidence{Type: EvidenceTask, Task: "t", State: "running", FromQueue: qc(func(*QueueCheck) {})}, "e.state: running with from_queue"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromQueue: qc(func(c *QueueCheck) { c.Dir = "q" })}, "e.from_queue.dir:"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromQueue: qc(func(c *QueueCheck) { c.Dir = "/q/../r" })}, "e.from_queue.dir:"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromQueue: qc(func(c *QueueCheck) { c.Seq = 0 })}, "e.from_queue.seq:"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromQueue: qc(func(c *QueueCheck) { c.Attempts = -1 })}, "e.from_queue.attempts:"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromQueue: qc(func(c *QueueCheck) { c.UpdatedAt = time.Time{} })}, "e.from_queue.updated_at:"},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(*SinkCheck) {})}, ""},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(c *SinkCheck) { c.Line = 0 })}, "e.from_sink.line:"},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(c *SinkCheck) { c.Subject = "a\nb" })}, "e.from_sink.subject:"},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(c *SinkCheck) { c.Type = strings.Repeat("t", 1025) })}, "e.from_sink.type:"},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(c *SinkCheck) { c.Seq = 1<<53 + 1 })}, "e.from_sink.seq:"},
		{Evidence{Type: EvidenceEvent, Event: ev, FromSink: sc(func(c *SinkCheck) { c.Path = "" })}, "e.from_sink.path:"},
		// Each source record belongs to its own type.
		{Evidence{Type: EvidenceEvent, Event: ev, FromQueue: qc(func(*QueueCheck) {})}, "e.from_queue: not allowed in event evidence"},
		{Evidence{Type: EvidenceTask, Task: "t", State: "failed", FromSink: sc(func(*SinkCheck) {})}, "e.from_sink: not allowed in task evidence"},
		{Evidence{Type: EvidenceNote, Text: "x", FromSink: sc(func(*SinkCheck) {})}, "e.from_sink: not allowed in note evidence"},
	}
	for _, tt := range tests {
		err := tt.e.validate("e")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.e, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != exitcode.Usage):
			t.Errorf("%+v: err %v; want exit 2 mentioning %q", tt.e, err, tt.want)
		}
	}
}
