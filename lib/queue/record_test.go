package queue

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"reflect"
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

// TestRecordStringEscapes: records use jsonx's one string writer, the
// canonical escapes (\b and \f in their two-letter forms), and a byte that
// is not UTF-8 becomes U+FFFD.
func TestRecordStringEscapes(t *testing.T) {
	ev := &Event{Seq: 1, Time: t0, Type: EventRequeued, Task: "t", Reason: "a\"b\\c\n\r\t\b\f\x01<>&\xffé"}
	line := string(AppendRecord(nil, ev))
	want := `"reason":"a\"b\\c\n\r\t\b\f\u0001<>&` + "\uFFFD" + `é"`
	if !strings.Contains(line, want) {
		t.Errorf("record = %s; want it to hold %s", line, want)
	}
	got, err := DecodeRecord([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\"b\\c\n\r\t\b\f\x01<>&\uFFFDé"; got.Reason != want {
		t.Errorf("decoded reason %q; want %q", got.Reason, want)
	}
}

// testdata/old-writer.log and old-writer.snapshot were written by the
// codec as it was before records shared jsonx's string writer: \b and \f
// as \u0008 and \u000c, invalid UTF-8 as the escape \ufffd. Logs and
// snapshots written that way must read as they always did.
func oldWriterEvents() []*Event {
	manifest := []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"t\bf","program":"echo","args":["\b\f\u0000"]}`)
	tr := &Trace{Status: execx.StatusFailed, ExitCode: 1, Signal: "SIG\bX",
		Reason:      "bell\a back\b feed\f nul\x00 us\x1f del\x7f bad\uFFFD\uFFFD é ✓ \"q\" \\",
		OutputSaved: new(bool), OutputError: "disk\ffull\uFFFD"}
	return []*Event{
		{Seq: 1, Time: t0, Type: EventEnqueued, Task: "t\b\f", MaxAttempts: 2, Manifest: manifest},
		{Seq: 2, Time: t0, Type: EventStarted, Task: "t\b\f", Attempt: 1, Worker: "w\f\uFFFD"},
		{Seq: 3, Time: t0, Type: EventTrace, Task: "t\b\f", Attempt: 1, Claim: 2, Trace: tr},
		{Seq: 4, Time: t0, Type: EventRequeued, Task: "t\b\f", Attempt: 1, Claim: 2, Worker: "w\f\uFFFD", Reason: "binary \uFFFD\uFFFD tail\b"},
	}
}

func TestRecordsOldWriter(t *testing.T) {
	data, err := os.ReadFile("testdata/old-writer.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, esc := range []string{`\u0008`, `\u000c`, `\ufffd`} {
		if !bytes.Contains(data, []byte(esc)) {
			t.Fatalf("testdata/old-writer.log holds no %s: it is not the old form", esc)
		}
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	want := oldWriterEvents()
	if len(lines) != len(want) {
		t.Fatalf("%d records; want %d", len(lines), len(want))
	}
	for i, line := range lines {
		ev, err := DecodeRecord(line)
		if err != nil {
			t.Fatalf("old record %s: %v", line, err)
		}
		if !reflect.DeepEqual(ev, want[i]) {
			t.Errorf("old record %s decodes to\n%+v\nwant\n%+v", line, ev, want[i])
		}
		now := AppendRecord(nil, ev)
		if bytes.Equal(now, line) {
			t.Errorf("record %d: today's writer gives the old bytes; the test no longer covers the old form", i+1)
		}
		if again, err := DecodeRecord(now); err != nil || !reflect.DeepEqual(again, ev) {
			t.Errorf("today's form %s decodes to %+v, %v; want %+v", now, again, err, ev)
		}
	}
}

func TestSnapshotOldWriter(t *testing.T) {
	data, err := os.ReadFile("testdata/old-writer.snapshot")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	evs := oldWriterEvents()
	want := Task{ID: "t\b\f", State: StateRunning, Attempt: 1, Attempts: 1, MaxAttempts: 2, Manifest: evs[0].Manifest,
		Worker: evs[1].Worker, Claim: 2, Trace: evs[2].Trace, Last: evs[2].Trace, LastAttempt: 1,
		CreatedAt: t0, UpdatedAt: t0, EnqSeq: 1, LastSeq: 3}
	if snap.Seq != 4 || !snap.Time.Equal(t0) || len(snap.Tasks) != 1 || !reflect.DeepEqual(snap.Tasks[0], want) {
		t.Fatalf("old snapshot decodes to %+v; want one task %+v", snap, want)
	}
	again, err := DecodeSnapshot(EncodeSnapshot(snap))
	if err != nil || !reflect.DeepEqual(again, snap) {
		t.Fatalf("today's form of the old snapshot decodes to %+v, %v", again, err)
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
