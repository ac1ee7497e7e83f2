package obs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

func TestEmitSequencesPerSubject(t *testing.T) {
	mem := NewMemory()
	e := New(Options{Now: fixedClock()}, mem)
	defer e.Close()
	for _, s := range []string{"a", "a", "b", "a", "b"} {
		if d := e.Emit(context.Background(), Draft{Subject: s, Type: "x"}); d.Err != nil {
			t.Fatal(d.Err)
		}
	}
	var got []string
	for _, env := range mem.Envelopes() {
		got = append(got, fmt.Sprintf("%s%d", env.Subject(), env.Seq()))
	}
	if strings.Join(got, " ") != "a1 a2 b1 a3 b2" {
		t.Errorf("seqs = %v; want a1 a2 b1 a3 b2", got)
	}
}

func TestEmitDeterministicIDs(t *testing.T) {
	run := func() []string {
		mem := NewMemory()
		e := New(Options{Now: fixedClock()}, mem)
		defer e.Close()
		for i := range 5 {
			e.Emit(context.Background(), Draft{Subject: "s", Type: "t", Attrs: map[string]any{"i": i, "m": map[string]any{"b": 1, "a": 2}}})
		}
		var ids []string
		for _, env := range mem.Envelopes() {
			ids = append(ids, env.ID())
		}
		return ids
	}
	a, b := run(), run()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("same drafts, same clock, different ids:\n%v\n%v", a, b)
	}
}

func TestEmitConcurrentKeepsSubjectOrder(t *testing.T) {
	mem := NewMemory()
	e := New(Options{}, mem)
	defer e.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				e.Emit(context.Background(), Draft{Subject: fmt.Sprintf("s%d", (g+i)%3), Type: "t", Attrs: map[string]any{"g": g, "i": i}})
			}
		}()
	}
	wg.Wait()
	next := map[string]uint64{}
	envs := mem.Envelopes()
	for _, env := range envs {
		next[env.Subject()]++
		if env.Seq() != next[env.Subject()] {
			t.Fatalf("%s: seq %d in sink order; want %d", env.Subject(), env.Seq(), next[env.Subject()])
		}
	}
	if len(envs) != 800 {
		t.Errorf("%d envelopes; want 800", len(envs))
	}
}

func TestEmitCancelledContext(t *testing.T) {
	mem := NewMemory()
	var warned []error
	e := New(Options{Warn: func(err error) { warned = append(warned, err) }}, mem)
	defer e.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("operator pressed ^C"))
	d := e.Emit(ctx, Draft{Subject: "s", Type: "t"})
	if d.Err == nil || !strings.Contains(d.Err.Error(), "operator pressed ^C") || len(mem.Envelopes()) != 0 || len(warned) != 1 {
		t.Errorf("cancelled ctx: %v, %d envelopes, %d warnings; want not emitted, cause reported", d.Err, len(mem.Envelopes()), len(warned))
	}
	// A detached context still records the end of the work.
	d = e.Emit(context.WithoutCancel(ctx), Draft{Subject: "s", Type: "t.finished"})
	if d.Err != nil || len(mem.Envelopes()) != 1 {
		t.Errorf("detached ctx: %v, %d envelopes; want delivered", d.Err, len(mem.Envelopes()))
	}
}

type failSink struct{ n int }

func (f *failSink) Name() string { return "broken" }
func (f *failSink) Append(context.Context, *Envelope) (Outcome, error) {
	f.n++
	return Failed, errors.New("disk on fire")
}
func (f *failSink) Close() error { return nil }

func TestEmitSinkFailureIsIsolated(t *testing.T) {
	mem, bad := NewMemory(), &failSink{}
	var warned []string
	e := New(Options{Warn: func(err error) { warned = append(warned, err.Error()) }}, bad, mem)
	defer e.Close()
	d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if len(mem.Envelopes()) != 1 || d.Envelope == nil {
		t.Fatalf("memory sink did not get the event: %+v", d)
	}
	if d.Err == nil || !strings.Contains(d.Err.Error(), "events broken: append: disk on fire") {
		t.Errorf("Delivery.Err = %v", d.Err)
	}
	if d.Results[0].Outcome != Failed || d.Results[1].Outcome != Appended {
		t.Errorf("results = %+v", d.Results)
	}
	if len(warned) != 1 {
		t.Errorf("warnings = %v; want one", warned)
	}
	// The next event still gets the next seq.
	d = e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if d.Envelope.Seq() != 2 {
		t.Errorf("seq after a failure = %d; want 2", d.Envelope.Seq())
	}
}

func TestEmitBadDraftNeverPanics(t *testing.T) {
	mem := NewMemory()
	e := New(Options{}, mem)
	defer e.Close()
	d := e.Emit(context.Background(), Draft{Type: "t", Attrs: map[string]any{"f": func() {}}})
	if d.Err == nil || exitcode.Of(d.Err) != exitcode.Usage || !strings.Contains(d.Err.Error(), "draft.subject: required") {
		t.Errorf("Emit(no subject) = %v", d.Err)
	}
	var nilE *Emitter
	if d := nilE.Emit(context.Background(), Draft{}); d.Err != nil || d.Envelope != nil {
		t.Errorf("nil emitter: %+v", d)
	}
	if err := nilE.Close(); err != nil {
		t.Error(err)
	}
	none, err := Open(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := none.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Err != nil || d.Envelope != nil {
		t.Errorf("emitter without sinks: %+v", d)
	}
}

func TestOpenSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		specs []string
		want  string
		code  int
	}{
		{[]string{"bogus"}, "invalid sink", 2},
		{[]string{"jsonl:"}, "invalid sink", 2},
		{[]string{"stdout"}, "stdout sink needs a stdout writer", 2},
		{[]string{"jsonl:" + dir + "/a", "jsonl:" + dir + "/./a"}, "given twice", 2},
	} {
		e, err := Open(tt.specs, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != tt.code {
			t.Errorf("Open(%q) = %v, %v; want %q exit %d", tt.specs, e, err, tt.want, tt.code)
		}
	}
	var out bytes.Buffer
	e, err := Open([]string{"stdout", "jsonl:" + dir + "/b"}, Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"})
	if d.Err != nil || out.String() != string(d.Envelope.AppendLine(nil)) {
		t.Errorf("stdout got %q; want the record", out.String())
	}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	if d := e.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); !errors.Is(d.Err, ErrClosed) {
		t.Errorf("Emit after Close = %v; want ErrClosed", d.Err)
	}
}

func TestDeliverIdempotentAndChecked(t *testing.T) {
	src := NewMemory()
	e := New(Options{Now: fixedClock()}, src)
	for i := range 3 {
		e.Emit(context.Background(), Draft{Subject: "s", Type: "t", Attrs: map[string]any{"i": i}})
	}
	e.Close()
	dst := NewMemory()
	f := New(Options{}, dst)
	defer f.Close()
	for range 2 {
		for _, env := range src.Envelopes() {
			if d := f.Deliver(context.Background(), env); d.Err != nil {
				t.Fatal(d.Err)
			}
		}
	}
	if len(dst.Envelopes()) != 3 {
		t.Errorf("delivered twice: %d envelopes; want 3", len(dst.Envelopes()))
	}
	// Emitting after a delivery continues the subject's sequence.
	if d := f.Emit(context.Background(), Draft{Subject: "s", Type: "t"}); d.Envelope.Seq() != 4 {
		t.Errorf("seq after deliver = %d; want 4", d.Envelope.Seq())
	}
	// An envelope sealed from raw attributes (not through redaction) is refused.
	raw := seal(header{subject: "s2", typ: "t", time: "2024-01-01T00:00:00Z"}, 1, []byte(`{"password":"hunter2"}`), src.Envelopes()[0].red)
	if d := f.Deliver(context.Background(), raw); !errors.Is(d.Err, ErrNotRedacted) || exitcode.Of(d.Err) != exitcode.Usage {
		t.Errorf("Deliver(unredacted) = %v; want ErrNotRedacted", d.Err)
	}
	// An older seq of a subject the sink already holds is stale.
	old := seal(header{subject: "s", typ: "other", time: "2024-01-01T00:00:00Z"}, 2, []byte(`{}`), src.Envelopes()[0].red)
	if d := f.Deliver(context.Background(), old); !errors.Is(d.Err, ErrStale) || exitcode.Of(d.Err) != exitcode.Conflict {
		t.Errorf("Deliver(stale) = %v; want ErrStale exit 3", d.Err)
	}
}

func TestEmitBatch(t *testing.T) {
	path := t.TempDir() + "/e.jsonl"
	mem := NewMemory()
	var out bytes.Buffer
	e := New(Options{Now: fixedClock()}, openJSONL(t, path, JSONLOptions{Sync: true}), NewWriter("stdout", &out), mem)
	ds := []Draft{
		{Subject: "a", Type: "t"},
		{Subject: "b", Type: "t"},
		{Type: "no-subject"},
		{Subject: "a", Type: "t", Attrs: map[string]any{"password": "x"}},
	}
	dels := e.EmitBatch(context.Background(), ds)
	if dels[2].Err == nil || dels[2].Envelope != nil {
		t.Errorf("invalid draft in a batch: %+v", dels[2])
	}
	for _, i := range []int{0, 1, 3} {
		if dels[i].Err != nil || len(dels[i].Results) != 3 {
			t.Fatalf("batch item %d: %+v", i, dels[i])
		}
		for _, r := range dels[i].Results {
			if r.Outcome != Appended {
				t.Errorf("item %d sink %s: %v", i, r.Sink, r.Outcome)
			}
		}
	}
	if dels[3].Envelope.Seq() != 2 || dels[1].Envelope.Seq() != 1 {
		t.Errorf("seqs %d %d", dels[3].Envelope.Seq(), dels[1].Envelope.Seq())
	}
	e.Close()
	file, _ := os.ReadFile(path)
	if string(file) != out.String() || strings.Count(out.String(), "\n") != 3 || len(mem.Envelopes()) != 3 {
		t.Errorf("sinks differ:\n%s\n%s", file, out.String())
	}
	verifyClean(t, path)

	// A batch of deliveries: a duplicate inside the batch, one already held,
	// one stale; the others land.
	envs := mem.Envelopes()
	j := openJSONL(t, path, JSONLOptions{})
	f := New(Options{}, j)
	defer f.Close()
	other := seal(header{subject: "c", typ: "t", time: "2024-01-01T00:00:00Z"}, 1, []byte(`{}`), envs[0].red)
	stale := seal(header{subject: "a", typ: "late", time: "2024-01-01T00:00:00Z"}, 1, []byte(`{}`), envs[0].red)
	got := f.DeliverBatch(context.Background(), []*Envelope{other, envs[0], other, stale})
	if got[0].Results[0].Outcome != Appended || got[1].Results[0].Outcome != Duplicate || got[2].Results[0].Outcome != Duplicate ||
		!errors.Is(got[3].Err, ErrStale) {
		t.Errorf("deliver batch outcomes: %v %v %v %v", got[0].Results, got[1].Results, got[2].Results, got[3].Err)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 4 {
		t.Errorf("file has %d records; want 4", strings.Count(string(b), "\n"))
	}
}

func TestLinesBatches(t *testing.T) {
	in := "a\n\n  \nb\nc"
	var got []string
	err := Lines(context.Background(), strings.NewReader(in), "in", 2, func(batch []Line) error {
		if len(batch) > 2 || len(batch) == 0 {
			t.Errorf("batch of %d", len(batch))
		}
		for _, l := range batch {
			got = append(got, fmt.Sprintf("%d:%s", l.N, l.B))
		}
		return nil
	})
	if err != nil || strings.Join(got, " ") != "1:a 4:b 5:c" {
		t.Errorf("Lines = %v, %v", got, err)
	}
	// A failing callback stops it; a too-long line is a usage error.
	stop := errors.New("stop")
	if err := Lines(context.Background(), strings.NewReader("x\ny\n"), "in", 1, func([]Line) error { return stop }); err != stop {
		t.Errorf("Lines with failing fn = %v", err)
	}
	long := strings.Repeat("x", MaxDraftBytes+1) + "\n"
	if err := Lines(context.Background(), strings.NewReader("ok\n"+long), "in", 8, func([]Line) error { return nil }); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "in:2: line longer") {
		t.Errorf("long line: %v", err)
	}
	// A cancelled context returns at once although the reader blocks.
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupted"))
	if err := Lines(ctx, pr, "in", 8, func([]Line) error { return nil }); err == nil || err.Error() != "interrupted" {
		t.Errorf("Lines on cancelled ctx = %v", err)
	}
}
