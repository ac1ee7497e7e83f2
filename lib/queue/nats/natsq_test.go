package natsq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/queuetest"
)

var bg = context.Background()

func open(t testing.TB, url, name string, o Options) *Backend {
	t.Helper()
	b, err := Open(bg, url, name, o)
	if err != nil {
		t.Fatalf("Open(%s, %s): %v", url, name, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func streams(t *testing.T, url string) []string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var out []string
	l := js.StreamNames(bg)
	for n := range l.Name() {
		out = append(out, n)
	}
	if l.Err() != nil {
		t.Fatal(l.Err())
	}
	return out
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestUnreachableServer(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	for _, ro := range []bool{false, true} {
		start := time.Now()
		_, err := Open(bg, url, "q", Options{ReadOnly: ro, Timeout: time.Second})
		if err == nil {
			t.Fatal("Open of an unreachable server succeeded")
		}
		if exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "cannot connect") || !strings.Contains(err.Error(), url) {
			t.Errorf("error = %v (exit %d); want exit 125 naming the server and saying it cannot connect", err, exitcode.Of(err))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Open took %s to give up", d)
		}
	}
	// Credentials in the URL are not echoed.
	_, err := Open(bg, fmt.Sprintf("nats://user:s3cret@127.0.0.1:%d", freePort(t)), "q", Options{Timeout: time.Second})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error = %v; want one without the password", err)
	}
}

func TestNoJetStream(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{NoJetStream: true})
	_, err := Open(bg, srv.URL(), "q", Options{Timeout: 2 * time.Second})
	if err == nil || exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "JetStream is not enabled") {
		t.Errorf("Open on a server without JetStream: %v; want exit 125 saying so", err)
	}
}

func TestBadNames(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	for _, name := range []string{"", "a.b", "a*", "a>", "a b", "-x", strings.Repeat("x", 129)} {
		if _, err := Open(bg, srv.URL(), name, Options{}); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("queue name %q: %v; want exit 2", name, err)
		}
	}
	b := open(t, srv.URL(), "q", Options{})
	for _, id := range []string{"a.b", "*", ">", "a b", ""} {
		p := queuetest.Enq(id)
		if _, err := b.Append(bg, []queue.Proposal{p}); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("task id %q: %v; want exit 2", id, err)
		}
	}
	if got := queuetest.ReadAll(t, b, 0); len(got) != 0 {
		t.Errorf("refused ids appended %d events", len(got))
	}
}

// TestRefusesUnsafeStreams: a stream of the queue's name that could lose or
// reorder events is refused, and left as it is.
func TestRefusesUnsafeStreams(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cases := []struct {
		name string
		cfg  jetstream.StreamConfig
		want string
	}{
		{"wq", jetstream.StreamConfig{Retention: jetstream.WorkQueuePolicy}, "work-queue"},
		{"mem", jetstream.StreamConfig{Storage: jetstream.MemoryStorage}, "memory"},
		{"age", jetstream.StreamConfig{MaxAge: time.Hour}, "max_age"},
		{"per", jetstream.StreamConfig{MaxMsgsPerSubject: 1}, "max_msgs_per_subject"},
		{"lim", jetstream.StreamConfig{MaxMsgs: 10}, "discard"},
		{"async", jetstream.StreamConfig{PersistMode: jetstream.AsyncPersistMode}, "async"},
		{"noatomic", jetstream.StreamConfig{}, "allow_atomic"},
		{"dup", jetstream.StreamConfig{AllowAtomicPublish: true, Duplicates: 2 * time.Second}, "duplicate window"},
	}
	for _, c := range cases {
		cfg := c.cfg
		cfg.Name, cfg.Subjects = "ART_"+c.name, []string{"art." + c.name + ".>"}
		if _, err := js.CreateStream(bg, cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err := Open(bg, srv.URL(), c.name, Options{})
		if exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want exit 125 mentioning %q", c.name, err, c.want)
		}
	}
}

// TestCreatesOnFirstUse: the stream is created by the first writer, with
// the configuration the durability story depends on.
func TestCreatesOnFirstUse(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	if s := streams(t, srv.URL()); len(s) != 0 {
		t.Fatalf("streams before = %v", s)
	}
	ro := open(t, srv.URL(), "q", Options{ReadOnly: true})
	queuetest.ReadAll(t, ro, 0)
	ro.Check(bg)
	if s := streams(t, srv.URL()); len(s) != 0 {
		t.Fatalf("a read-only backend created %v", s)
	}
	b := open(t, srv.URL(), "q", Options{})
	info, err := b.js.Stream(bg, "ART_q")
	if err != nil {
		t.Fatal(err)
	}
	c := info.CachedInfo().Config
	if c.Retention != jetstream.LimitsPolicy || c.Storage != jetstream.FileStorage || !c.DenyDelete || c.DenyPurge ||
		!c.AllowAtomicPublish || c.AllowDirect || c.Duplicates != DuplicateWindow || c.Subjects[0] != "art.q.>" || c.Discard != jetstream.DiscardNew {
		t.Errorf("stream config = %+v", c)
	}
	// A second writer uses the stream as it is.
	open(t, srv.URL(), "q", Options{})
	if s := streams(t, srv.URL()); len(s) != 1 || s[0] != "ART_q" {
		t.Errorf("streams = %v; want ART_q only (buckets come with leases and snapshots)", s)
	}
}

// TestRetriedPublishIsRecognised: a publish whose first copy landed but
// whose acknowledgement was lost is sent again byte for byte; the backend
// finds its own record and reports success, and the log holds it once.
func TestRetriedPublishIsRecognised(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "q", Options{})
	queuetest.MustAppend(t, b, queuetest.Enq("a"))
	cases := []struct {
		name string
		ps   []queue.Proposal
	}{
		// Refused as stale by the server (condition checked before dedup).
		{"conditional", []queue.Proposal{queuetest.Ev(queue.EventStarted, "a", "w1", 1)}},
		// Answered as a duplicate.
		{"unconditional", []queue.Proposal{{Event: queuetest.Enq("gen").Event, Any: true}}},
		// Refused as a batch with a duplicate id.
		{"batch", []queue.Proposal{queuetest.Enq("b"), queuetest.Enq("c"), queuetest.Ev(queue.EventStarted, "a", "w1", 2)}},
	}
	for _, c := range cases {
		outs, err := b.prepare(c.ps)
		if err != nil {
			t.Fatal(err)
		}
		// The first copy lands; pretend its answer was lost.
		ack, err := b.send(bg, outs)
		if err != nil || ack.Error != nil {
			t.Fatalf("%s: first send: %v %v", c.name, err, ack.Error)
		}
		before := len(queuetest.ReadAll(t, b, 0))
		again, _ := b.prepare(c.ps)
		if err := b.publishFrom(bg, again, true); err != nil {
			t.Fatalf("%s: retried publish: %v; want success", c.name, err)
		}
		if again[len(again)-1].ev.Seq != ack.Seq {
			t.Errorf("%s: retried publish reports seq %d; the first copy is at %d", c.name, again[len(again)-1].ev.Seq, ack.Seq)
		}
		if after := len(queuetest.ReadAll(t, b, 0)); after != before {
			t.Errorf("%s: the retry appended %d more events", c.name, after-before)
		}
	}
	// A twin (same task, attempt, type and condition: the same message id)
	// from another worker is not mistaken for ours: it is a conflict.
	lastA, err := b.lastSeq(bg, "art.q.task.a")
	if err != nil {
		t.Fatal(err)
	}
	p := queuetest.Ev(queue.EventTrace, "a", "", lastA)
	twin := queuetest.Ev(queue.EventTrace, "a", "", lastA)
	twin.Event.Trace.DurationMS = 99
	queuetest.MustAppend(t, b, p)
	outs, _ := b.prepare([]queue.Proposal{twin})
	err = b.publishFrom(bg, outs, true)
	var se *queue.StaleError
	if !errors.As(err, &se) || se.Task != "a" || se.Expect != lastA {
		t.Errorf("a twin's publish: %v; want a StaleError for task a expecting %d", err, lastA)
	}
	// Requeued and started again (same attempt, same type): a new event,
	// not a duplicate, because its condition differs.
	last := queuetest.ReadAll(t, b, 0)
	n := last[len(last)-1].Seq
	queuetest.MustAppend(t, b, queue.Proposal{Event: &queue.Event{Time: time.Now(), Type: queue.EventRequeued, Task: "a", Attempt: 1}, Expect: n})
	queuetest.MustAppend(t, b, queuetest.Ev(queue.EventStarted, "a", "w1", n+1))
	starts := 0
	for _, ev := range queuetest.ReadAll(t, b, 0) {
		if ev.Task == "a" && ev.Type == queue.EventStarted {
			starts++
		}
	}
	// One from each case that started it, and the one after the requeue.
	if starts != 3 {
		t.Errorf("task a has %d started events; want 3 (the last after a requeue)", starts)
	}
}

func TestEventTooLarge(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{MaxPayload: 2048})
	b := open(t, srv.URL(), "q", Options{})
	p := queuetest.Enq("big")
	p.Event.Manifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true","args":["` + strings.Repeat("x", 4000) + `"]}`)
	_, err := b.Append(bg, []queue.Proposal{queuetest.Enq("small"), p})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "max_payload") {
		t.Errorf("an event larger than max_payload: %v; want exit 2 naming max_payload", err)
	}
	if got := queuetest.ReadAll(t, b, 0); len(got) != 0 {
		t.Errorf("a refused batch appended %d events", len(got))
	}
}

// TestServerBatchLimit: a server whose max_batch_size is below the
// backend's is learned from its refusal, and a batch larger than one
// atomic publish is refused whole (exit 2), never appended in parts.
func TestServerBatchLimit(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{MaxBatch: 10})
	b := open(t, srv.URL(), "q", Options{})
	var ps []queue.Proposal
	for i := range 35 {
		ps = append(ps, queuetest.Enq(fmt.Sprintf("t%d", i)))
	}
	_, err := b.Append(bg, ps)
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "atomic batch limit of 10") {
		t.Fatalf("Append of 35 over a limit of 10 = %v; want a refusal naming the limit (exit 2)", err)
	}
	if got := queuetest.ReadAll(t, b, 0); len(got) != 0 {
		t.Fatalf("a refused batch appended %d events", len(got))
	}
	if b.batchLimit() != 10 {
		t.Errorf("limit = %d; want 10 learned from the server", b.batchLimit())
	}
	// Within the limit: one atomic batch.
	if evs := queuetest.MustAppend(t, b, ps[:10]...); evs[9].Seq != 10 {
		t.Errorf("last seq %d; want 10", evs[9].Seq)
	}
}

// TestServerBatchLimitRaised: with no MaxBatch of its own the backend
// takes whatever the server allows: a batch above nats-server's default of
// 1,000 goes through a server raised to 100,000, whole, and against a
// default server the same batch is refused whole, nothing stored, and the
// limit is learned.
func TestServerBatchLimitRaised(t *testing.T) {
	var ps []queue.Proposal
	for i := range 2500 {
		ps = append(ps, queuetest.Enq(fmt.Sprintf("t%d", i)))
	}
	raised := open(t, natstest.Start(t, natstest.Options{MaxBatch: 100000}).URL(), "q", Options{})
	if evs := queuetest.MustAppend(t, raised, ps...); len(evs) != 2500 || evs[2499].Seq != 2500 {
		t.Fatalf("a batch of 2,500 on a raised server appended %d events", len(evs))
	}
	def := open(t, natstest.Start(t, natstest.Options{}).URL(), "q", Options{})
	_, err := def.Append(bg, ps)
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), fmt.Sprintf("atomic batch limit of %d", DefaultMaxBatch)) {
		t.Fatalf("Append of 2,500 on a default server = %v; want a refusal naming the limit (exit 2)", err)
	}
	if got := queuetest.ReadAll(t, def, 0); len(got) != 0 {
		t.Fatalf("a refused batch appended %d events", len(got))
	}
	if def.batchLimit() != DefaultMaxBatch {
		t.Errorf("limit = %d; want %d learned from the server", def.batchLimit(), DefaultMaxBatch)
	}
}

// TestCompactCrashAtEveryStep: a compaction stopped at any step leaves a
// queue that replays to the same state, and the next compaction finishes
// the job.
func TestCompactCrashAtEveryStep(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	for i, step := range []string{"snapshot", "compacted", "half-purged", "purged", "marked"} {
		name := fmt.Sprintf("crash%d", i)
		crash := errors.New("crash at " + step)
		b := open(t, srv.URL(), name, Options{hook: func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}})
		st := buildHistory(t, b, 20)
		want := tasks(st)
		if err := b.Compact(bg, st.Snapshot(time.Now())); !errors.Is(err, crash) {
			t.Fatalf("%s: Compact = %v; want the crash", step, err)
		}
		fresh := open(t, srv.URL(), name, Options{})
		if got := tasks(replayState(t, fresh)); got != want {
			t.Fatalf("%s: state after the crash:\n%s\nwant\n%s", step, got, want)
		}
		if _, err := fresh.Check(bg); err != nil {
			t.Errorf("%s: Check after the crash: %v", step, err)
		}
		// Appends keep their conditions; the next compaction completes.
		q, err := queue.Open(bg, fresh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(bg, "t3"); err != nil {
			t.Errorf("%s: cancel after the crash: %v", step, err)
		}
		if _, err := q.Compact(bg); err != nil {
			t.Fatalf("%s: Compact after the crash: %v", step, err)
		}
		rep, err := fresh.Check(bg)
		if err != nil {
			t.Fatalf("%s: Check: %v", step, err)
		}
		// Each of the 20 tasks keeps one event, plus the compacted event.
		if rep.Events != 21 {
			t.Errorf("%s: %d events held after the second compaction; want 21", step, rep.Events)
		}
		_, refs, _ := fresh.snapshots(bg, false)
		if len(refs) != 1 || !refs[0].purged {
			t.Errorf("%s: snapshots = %+v; want one, marked purged", step, refs)
		}
	}
}

// buildHistory enqueues n tasks and runs each through a few events.
func buildHistory(t *testing.T, b queue.Backend, n int) *queue.State {
	t.Helper()
	st := queue.NewState()
	apply := func(evs []*queue.Event) {
		for _, ev := range evs {
			if err := st.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		apply(queuetest.MustAppend(t, b, queuetest.Enq(id)))
		if i%3 == 0 {
			continue
		}
		apply(queuetest.MustAppend(t, b, queuetest.Ev(queue.EventStarted, id, "w1", st.Task(id).LastSeq)))
		if i%3 == 1 {
			apply(queuetest.MustAppend(t, b, queuetest.Ev(queue.EventTrace, id, "", st.Task(id).LastSeq)))
			apply(queuetest.MustAppend(t, b, queuetest.Ev(queue.EventSucceeded, id, "", st.Task(id).LastSeq)))
		}
	}
	return st
}

func tasks(st *queue.State) string {
	var sb strings.Builder
	st.Tasks(func(t *queue.Task) bool {
		fmt.Fprintf(&sb, "%s %s %d %d %s\n", t.ID, t.State, t.Attempt, t.LastSeq, t.Worker)
		return true
	})
	return sb.String()
}

func replayState(t *testing.T, b queue.Backend) *queue.State {
	t.Helper()
	q, err := queue.Inspect(bg, b)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	var out *queue.State
	q.View(bg, func(st *queue.State) error {
		out, _ = queue.NewStateFrom(st.Snapshot(time.Now()))
		return nil
	})
	return out
}

func TestAckMeta(t *testing.T) {
	cases := []struct {
		in           string
		seq, pending uint64
		ok           bool
	}{
		{"$JS.ACK.ART_q.c1.1.42.7.1700000000000000000.3", 42, 3, true},
		{"$JS.ACK._.acchash.ART_q.c1.1.42.7.1700000000000000000.0.rand", 42, 0, true},
		{"$JS.ACK.dom.acchash.ART_q.c1.1.42.7.1700000000000000000.5", 42, 5, true},
		{"$JS.ACK.ART_q.c1.1.x.7.1.3", 0, 0, false},
		{"$JS.ACK.a.b", 0, 0, false},
		{"_INBOX.x.y.z.1.2.3.4.5", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		seq, pending, ok := ackMeta(c.in)
		if seq != c.seq || pending != c.pending || ok != c.ok {
			t.Errorf("ackMeta(%q) = %d, %d, %v; want %d, %d, %v", c.in, seq, pending, ok, c.seq, c.pending, c.ok)
		}
	}
}

func FuzzAckMeta(f *testing.F) {
	f.Add("$JS.ACK.ART_q.c1.1.42.7.1700000000000000000.3")
	f.Add("$JS.ACK._.h.ART_q.c1.1.42.7.17.0.r")
	f.Fuzz(func(t *testing.T, s string) {
		seq, pending, ok := ackMeta(s)
		if !ok && (seq != 0 || pending != 0) {
			t.Errorf("not ok but %d, %d", seq, pending)
		}
		if ok && !strings.HasPrefix(s, "$JS.ACK.") {
			t.Error("accepted a subject that is not an ack subject")
		}
	})
}

func FuzzDecodeHeaders(f *testing.F) {
	f.Add([]byte("NATS/1.0\r\nKV-Operation: PURGE\r\nNats-TTL: 60s\r\n\r\n"))
	f.Add([]byte("NATS/1.0\r\n\r\n"))
	f.Add([]byte("NATS/1.0 404 No Messages\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, err := decodeHeaders(raw)
		if err == nil && h == nil {
			t.Error("nil header without an error")
		}
	})
}

func FuzzDecodePubAck(f *testing.F) {
	f.Add([]byte(`{"stream":"ART_q","seq":1}`))
	f.Add([]byte(`{"stream":"ART_q","seq":1,"duplicate": true}`))
	f.Add([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"ART_q","seq":0}`))
	f.Add([]byte(`{"stream":"ART_q","seq":4,"batch":"b","count":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodePubAck(&nats.Msg{Data: data, Header: nats.Header{}})
		if err != nil {
			return
		}
		if a.Error == nil && a.Seq == 0 {
			t.Error("an acknowledgement without a sequence or an error was accepted")
		}
		if a.Error != nil {
			a.Error.haveSeq()
			a.Error.stale()
			a.Error.transient()
		}
	})
}

func TestHaveSeq(t *testing.T) {
	for _, c := range []struct {
		e    apiError
		want uint64
		ok   bool
	}{
		{apiError{ErrCode: errWrongLastSeq, Description: "wrong last sequence: 17"}, 17, true},
		{apiError{ErrCode: errWrongLastSeq, Description: "wrong last sequence"}, 0, false},
		{apiError{ErrCode: errWrongLastSeqConstant, Description: "wrong last sequence"}, 0, false},
		{apiError{ErrCode: 10059, Description: "stream not found: 3"}, 0, false},
	} {
		if got, ok := c.e.haveSeq(); got != c.want || ok != c.ok {
			t.Errorf("%+v.haveSeq() = %d, %v", c.e, got, ok)
		}
	}
}

func TestSnapName(t *testing.T) {
	for _, seq := range []uint64{0, 1, 1234, 1<<64 - 1} {
		if got, ok := parseSnapName(snapName(seq)); !ok || got != seq {
			t.Errorf("round trip of %d: %d %v", seq, got, ok)
		}
	}
	for _, bad := range []string{"snapshot-1", "snapshot-0000000000000000000x", "other-00000000000000000001", ""} {
		if _, ok := parseSnapName(bad); ok {
			t.Errorf("parseSnapName(%q) accepted", bad)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":          "nats://127.0.0.1:4222",
		"nats://u:p@h:4222":              "nats://u:REDACTED@h:4222",
		"nats://token@h:4222":            "nats://REDACTED@h:4222",
		"tls://u:p@h:4222,nats://x:4222": "tls://u:REDACTED@h:4222,nats://x:4222",
		"nats://h:1,nats://t0k@h:2":      "nats://h:1,nats://REDACTED@h:2",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q; want %q", in, got, want)
		}
	}
}

// waitLeaseGone polls b until worker's lease is no longer alive, failing
// with why if it still is after within.
func waitLeaseGone(t *testing.T, b *Backend, worker string, within time.Duration, why string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		alive, err := b.Alive(bg, worker)
		if err != nil {
			t.Fatal(err)
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
