package queue

import (
	"bytes"
	"errors"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
)

var t0 = time.Date(2026, 11, 30, 3, 56, 19, 123456789, time.UTC)

func sampleEvents() []*Event {
	return []*Event{
		{Seq: 1, Time: t0, Type: EventEnqueued, Task: "t1", MaxAttempts: 3, Manifest: []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"t1","program":"echo","args":["a \"b\""]}`)},
		{Seq: 2, Time: t0, Type: EventStarted, Task: "t1", Attempt: 1, Worker: "w-1"},
		{Seq: 3, Time: t0, Type: EventTrace, Task: "t1", Attempt: 1, Trace: &Trace{Status: execx.StatusFailed, ExitCode: 3, DurationMS: 12, OutputBytes: 5}},
		{Seq: 4, Time: t0, Type: EventFailed, Task: "t1", Attempt: 1},
		{Seq: 5, Time: t0, Type: EventRetried, Task: "t1", Attempt: 2},
		{Seq: 6, Time: t0, Type: EventStarted, Task: "t1", Attempt: 2, Worker: "w-2"},
		{Seq: 7, Time: t0, Type: EventCancelRequested, Task: "t1", Attempt: 2},
		{Seq: 8, Time: t0, Type: EventTrace, Task: "t1", Attempt: 2, Trace: &Trace{Status: execx.StatusCancelled, ExitCode: -1, Signal: "SIGTERM", DurationMS: 1, OutputTruncated: true, OutputIncomplete: true}},
		{Seq: 9, Time: t0, Type: EventCancelled, Task: "t1", Attempt: 2},
		{Seq: 10, Time: t0, Type: EventRequeued, Task: "t2", Attempt: 1, Worker: "w-3", Reason: "recovered: worker w-3 is gone\n\t\x01 ✓"},
		{Seq: 11, Time: t0, Type: EventTruncated, Offset: 1234, Bytes: 56},
		{Seq: 12, Time: t0, Type: EventCompacted, Through: 11},
		{Seq: 13, Time: t0, Type: EventEnqueued, Task: "t3", MaxAttempts: 1, Manifest: []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"t3","program":"artagent"}`), Run: []byte(`{"workspace":"copy","source":"src/app","acceptance":["go","test","./..."]}`)},
		{Seq: 14, Time: t0, Type: EventTrace, Task: "t3", Attempt: 1, Trace: &Trace{Status: execx.StatusSucceeded, DurationMS: 900, OutputBytes: 4096, Acceptance: &Trace{Status: execx.StatusFailed, ExitCode: 1, DurationMS: 300, OutputBytes: 77}}},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, ev := range sampleEvents() {
		line := AppendRecord(nil, ev)
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("record %s contains a newline", line)
		}
		got, err := DecodeRecord(line)
		if err != nil {
			t.Fatalf("DecodeRecord(%s) = %v", line, err)
		}
		if again := AppendRecord(nil, got); !bytes.Equal(again, line) {
			t.Errorf("round trip changed the record:\n got %s\nwant %s", again, line)
		}
		if !got.Time.Equal(ev.Time) || got.Type != ev.Type || got.Task != ev.Task || got.Reason != ev.Reason {
			t.Errorf("DecodeRecord(%s) = %+v; want %+v", line, got, ev)
		}
	}
}

func TestRecordFieldOrder(t *testing.T) {
	line := string(AppendRecord(nil, sampleEvents()[1]))
	const want = `{"seq":2,"time":"2026-11-30T03:56:19.123456789Z","type":"started","task":"t1","attempt":1,"worker":"w-1","crc":`
	if !strings.HasPrefix(line, want) {
		t.Errorf("record = %s; want prefix %s", line, want)
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	good := string(AppendRecord(nil, sampleEvents()[1]))
	cases := []struct {
		name, line, want string
	}{
		{"empty", "", "incomplete"},
		{"fragment", good[:len(good)-3], "incomplete"},
		{"no crc", `{"seq":1,"time":"2026-11-30T03:56:19Z","type":"started"}`, "no crc"},
		{"flipped byte", strings.Replace(good, `"w-1"`, `"w-2"`, 1), "checksum"},
		{"bad crc digits", good[:strings.LastIndex(good, ":")+1] + "01}", "bad crc"},
	}
	for _, c := range cases {
		_, err := DecodeRecord([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: DecodeRecord(%q) = %v; want error containing %q", c.name, c.line, err, c.want)
		}
	}
	if _, err := DecodeRecord([]byte(strings.Replace(good, `"w-1"`, `"w-2"`, 1))); !errors.Is(err, ErrChecksum) {
		t.Errorf("a flipped byte gives %v; want ErrChecksum", err)
	}
}

// sign appends a valid crc to a hand-written object body (without its
// closing brace), so tests can reach the member checks behind the checksum.
func sign(body string) []byte {
	sum := crc32.Checksum([]byte(body), castagnoli)
	return []byte(body + crcKey + strconv.FormatUint(uint64(sum), 10) + "}")
}

func TestDecodeRecordMembers(t *testing.T) {
	const base = `{"seq":1,"time":"2026-11-30T03:56:19Z","type":"started"`
	cases := []struct {
		body, want string
	}{
		{base + `,"task":"a","task":"b"`, "duplicate"},
		{base + `,"color":"red"`, "unknown member"},
		{base + `,"attempt":"1"`, "attempt"},
		{base + `,"attempt":1.0`, "attempt"},
		{base + `,"attempt":01`, "attempt"},
		{base + `,"attempt":-0`, "attempt"},
		{base + `,"attempt":99999999999`, "attempt"},
		{base + `,"task":null`, "task"},
		{base + `,"trace":{"exit_code":1}`, "missing status"},
		{base + `,"trace":{"status":"failed","stdout":"x"}`, "unknown member"},
		{base + `,"manifest":[1]`, "manifest"},
		{base + `,"run":"copy"`, "run: want an object"},
		{base + `,"run":{"workspace":"copy"},"run":{}`, "duplicate"},
		{base + `,"trace":{"status":"succeeded","acceptance":{"status":"failed","acceptance":{"status":"failed"}}}`, "in a trace only"},
		{base + `,"trace":{"status":"succeeded","acceptance":[]}`, "acceptance"},
		{base + `,"trace":{"status":"succeeded","acceptance":{"exit_code":1}}`, "missing status"},
		{`{"seq":1,"time":"yesterday","type":"started"`, "time"},
		{`{"seq":1,"time":"2026-11-30T03:56:19Z","type":"exploded"`, "unknown event type"},
		{`{"time":"2026-11-30T03:56:19Z","type":"started"`, "missing seq"},
		{`{"seq":1,"type":"started"`, "missing time"},
		{base + `,"task":"\xff"`, "task"},
	}
	for _, c := range cases {
		_, err := DecodeRecord(sign(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeRecord(%s) = %v; want error containing %q", c.body, err, c.want)
		}
	}
	if _, err := DecodeRecord(sign(base + `,"task":"a"`)); err != nil {
		t.Errorf("a minimal signed record: %v", err)
	}
}

func TestAppendStringEscapes(t *testing.T) {
	got := string(appendString(nil, "a\"b\\c\n\r\t\x01<>&\xffé"))
	want := `"a\"b\\c\n\r\t\u0001<>&\ufffdé"`
	if got != want {
		t.Errorf("appendString = %s; want %s", got, want)
	}
}

func TestEventDoc(t *testing.T) {
	got := string(AppendEventDoc(nil, sampleEvents()[3]))
	want := `{"apiVersion":"art/v1alpha1","kind":"QueueEvent","seq":4,"time":"2026-11-30T03:56:19.123456789Z","type":"failed","task":"t1","attempt":1}`
	if got != want {
		t.Errorf("AppendEventDoc = %s; want %s", got, want)
	}
}

// FuzzDecodeRecord: any input either fails cleanly or decodes to an event
// whose encoding decodes back to the same encoding.
func FuzzDecodeRecord(f *testing.F) {
	for _, ev := range sampleEvents() {
		f.Add(AppendRecord(nil, ev))
	}
	f.Add(sign(`{"seq":1,"time":"2026-11-30T03:56:19Z","type":"started","trace":{"status":"x"}`))
	f.Add([]byte(`{"seq":1}`))
	f.Add(AppendRecord(nil, &Event{Seq: 7, Time: t0, Type: EventEnqueued, Task: "b", MaxAttempts: 1, Batch: 5, Commit: true, Manifest: []byte(`{"batch":1}`)}))
	f.Add(AppendRecord(nil, &Event{Seq: 9, Time: t0, Type: EventTrace, Task: "b", Attempt: 1, Claim: 8, Trace: &Trace{Status: execx.StatusSucceeded, OutputSaved: new(bool), OutputError: "disk full"}}))
	f.Fuzz(func(t *testing.T, line []byte) {
		// Through the checksum, and past it: the checksum would otherwise
		// keep the fuzzer away from the member decoder.
		// RecordBatch reads what DecodeRecord does, or fails where it does.
		if ev, err := DecodeRecord(line); err == nil {
			seq, batch, commit, berr := RecordBatch(line)
			if berr != nil || seq != ev.Seq || batch != ev.Batch || commit != ev.Commit {
				t.Fatalf("RecordBatch = %d, %d, %v, %v; DecodeRecord says %d, %d, %v", seq, batch, commit, berr, ev.Seq, ev.Batch, ev.Commit)
			}
		}
		for _, decode := range []func([]byte) (*Event, error){
			DecodeRecord,
			func(b []byte) (*Event, error) { return decodeEvent(b, false) },
		} {
			ev, err := decode(line)
			if err != nil {
				continue
			}
			enc := AppendRecord(nil, ev)
			ev2, err := DecodeRecord(enc)
			if err != nil {
				t.Fatalf("re-encoded record %s does not decode: %v", enc, err)
			}
			if again := AppendRecord(nil, ev2); !bytes.Equal(again, enc) {
				t.Fatalf("unstable encoding:\n%s\n%s", enc, again)
			}
		}
	})
}
