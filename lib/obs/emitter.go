package obs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// Options configure an Emitter.
type Options struct {
	// Sync fsyncs every JSONL record before Emit returns (group commit).
	Sync bool
	// HMACKey turns redaction markers into keyed hashes (see package redact).
	HMACKey []byte
	// Limits bound redacted attributes (zero: redact.DefaultLimits).
	Limits redact.Limits
	// Stdout is where the "stdout" sink writes. A tool passes its cli.IO.Out.
	Stdout io.Writer
	// Warn receives each failed delivery's error (and recovery notes such as
	// a truncated torn record). A tool prints it as a warning; nil ignores.
	Warn func(error)
	// Now is the clock for Drafts without a time (default time.Now).
	Now func() time.Time
	// Remote opens an "otlphttp://HOST:PORT" sink. This package links no
	// network client (artobs, artexec and artgoal stay lean): a tool that
	// exports OTLP passes lib/obs/otlp's opener; without one, such a spec
	// is a usage error.
	Remote func(spec string) (Sink, error)
	// RecoverBytes is the JSONL tail window (0: DefaultRecoverBytes).
	RecoverBytes int64
	// Replay makes emitting a stream again idempotent: a Draft with a
	// time of its own that a sequencing sink already holds (the same
	// subject, content and time, under one of the subject's sequence
	// numbers) is recognised and delivered as that same envelope, which
	// the sink keeps once. artobs emit --wrap sets it when the events take
	// their time from the records (artq log | artobs emit --wrap queue run
	// twice appends nothing the second time).
	Replay bool
}

// Emitter redacts Drafts into Envelopes, gives each the next sequence
// number of its subject, and delivers it to every sink in order. One mutex
// serialises sequencing and delivery, so the sequence of a subject follows
// the order of Emit calls and every sink sees the same order; the sinks'
// synchronous Appends are the backpressure. Redaction runs before the lock,
// in the caller's goroutine.
//
// A nil *Emitter is valid and emits nothing, so a tool without --events can
// call Emit unconditionally.
type Emitter struct {
	red  *redact.Redactor
	warn func(error)
	now  func() time.Time

	mu       sync.Mutex
	sinks    []Sink
	seqs     []int // indexes of sequencer sinks, in lock order
	last     map[string]uint64
	replay   bool
	cursor   map[string]uint64 // Replay: the next seq to try per subject
	closed   bool
	inflight sync.WaitGroup // deliveries still waiting for an fsync
}

// Result is one sink's part of a Delivery.
type Result struct {
	Sink    string
	Outcome Outcome
	Err     error
}

// Delivery is what happened to one event. Err is nil when every sink
// appended it or already had it; it never means the observed work failed.
type Delivery struct {
	Envelope *Envelope // nil when the Draft was refused or nothing was emitted
	Results  []Result
	Err      error
}

// New returns an Emitter over sinks, which it owns (Close closes them).
func New(o Options, sinks ...Sink) *Emitter {
	e := &Emitter{
		red:    redact.New(redact.Options{HMACKey: o.HMACKey, Limits: o.Limits}),
		warn:   o.Warn,
		now:    o.Now,
		sinks:  sinks,
		last:   map[string]uint64{},
		replay: o.Replay,
		cursor: map[string]uint64{},
	}
	if e.now == nil {
		e.now = time.Now
	}
	for i, s := range sinks {
		if _, ok := s.(sequencer); ok {
			e.seqs = append(e.seqs, i)
		}
	}
	slices.SortStableFunc(e.seqs, func(a, b int) int {
		return strings.Compare(sinks[a].(sequencer).lockOrder(), sinks[b].(sequencer).lockOrder())
	})
	return e
}

// ParseSink splits a sink spec: "stdout", "jsonl:PATH", or
// "otlphttp://HOST:PORT" (kind "otlphttp", path the whole spec; opened
// through Options.Remote, see there).
func ParseSink(spec string) (kind, path string, err error) {
	switch {
	case spec == "stdout":
		return "stdout", "", nil
	case strings.HasPrefix(spec, "jsonl:") && len(spec) > len("jsonl:"):
		return "jsonl", spec[len("jsonl:"):], nil
	case strings.HasPrefix(spec, "otlphttp://"):
		return "otlphttp", spec, nil
	}
	return "", "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: %w", spec, ErrSinkSpec))
}

// Open opens an Emitter on sink specs as given to --events or --sink
// ("jsonl:PATH", "stdout"). No specs gives an Emitter that emits nothing.
// A bad spec is a usage error (exit 2); a sink that cannot be opened is
// returned as its *SinkError (refusals exit 126, I/O 125). Tools that must
// not fail their work over events report that error as a warning and carry
// on with a nil Emitter.
func Open(specs []string, o Options) (*Emitter, error) {
	var sinks []Sink
	closeAll := func() {
		for _, s := range sinks {
			s.Close()
		}
	}
	seen := map[string]bool{}
	for _, spec := range specs {
		kind, path, err := ParseSink(spec)
		if err != nil {
			closeAll()
			return nil, err
		}
		switch kind {
		case "stdout":
			if o.Stdout == nil {
				closeAll()
				return nil, exitcode.Field(exitcode.Usage, "Events", "", "stdout sink needs a stdout writer")
			}
			if seen["stdout"] {
				closeAll()
				return nil, exitcode.Field(exitcode.Usage, "Events", "", "stdout given twice")
			}
			seen["stdout"] = true
			sinks = append(sinks, NewWriter("stdout", o.Stdout))
		case "jsonl":
			j, err := OpenJSONL(path, JSONLOptions{Sync: o.Sync, RecoverBytes: o.RecoverBytes})
			if err != nil {
				closeAll()
				return nil, err
			}
			if seen[j.order] {
				j.Close()
				closeAll()
				return nil, exitcode.Field(exitcode.Usage, "Events", "", "%s is given twice (the same file)", path)
			}
			seen[j.order] = true
			if r := j.Recovery(); r.TornBytes > 0 && o.Warn != nil {
				o.Warn(fmt.Errorf("events %s: truncated a torn last record (%d bytes) left by a writer that died mid-write", j.Name(), r.TornBytes))
			}
			sinks = append(sinks, j)
		case "otlphttp":
			if o.Remote == nil {
				closeAll()
				return nil, exitcode.Field(exitcode.Usage, "Events", "", "%s: OTLP export is done by artq and artagent; this tool writes jsonl:PATH or stdout", path)
			}
			if seen[path] {
				closeAll()
				return nil, exitcode.Field(exitcode.Usage, "Events", "", "%s given twice", path)
			}
			seen[path] = true
			r, err := o.Remote(path)
			if err != nil {
				closeAll()
				return nil, err
			}
			sinks = append(sinks, r)
		}
	}
	return New(o, sinks...), nil
}

// Sinks returns the emitter's sinks.
func (e *Emitter) Sinks() []Sink {
	if e == nil {
		return nil
	}
	return slices.Clone(e.sinks)
}

// Redactor is the emitter's redactor (deliver checks envelopes with it).
func (e *Emitter) Redactor() *redact.Redactor { return e.red }

// Emit redacts d, seals it as the next event of its subject and delivers it
// to every sink. A cancelled ctx emits nothing; to record the end of work
// that was cancelled, pass context.WithoutCancel(ctx). Emit never panics and
// never fails the caller: problems are in the Delivery (and go to Warn).
func (e *Emitter) Emit(ctx context.Context, d Draft) Delivery {
	if e == nil || len(e.sinks) == 0 {
		return Delivery{}
	}
	return e.EmitBatch(ctx, []Draft{d})[0]
}

// EmitBatch is Emit for several drafts at once, in order: one lock of each
// sink, one write per sink and (with Sync) one fsync for the whole batch.
// A stream reader passes the lines it already has, so throughput grows
// with load while a lone line still goes out at once.
func (e *Emitter) EmitBatch(ctx context.Context, ds []Draft) []Delivery {
	out := make([]Delivery, len(ds))
	if e == nil || len(e.sinks) == 0 {
		return out
	}
	items := make([]item, len(ds))
	for i := range ds {
		it := &items[i]
		if ctx.Err() != nil {
			it.d, it.skip = e.fail(fmt.Errorf("event %s %s not emitted: %w", ds[i].Subject, ds[i].Type, context.Cause(ctx))), true
			continue
		}
		p, err := e.prepare(&ds[i])
		if err != nil {
			it.d, it.skip = e.fail(fmt.Errorf("event not emitted: %w", err)), true
			continue
		}
		it.p = &p
	}
	e.deliver(ctx, items)
	for i := range items {
		out[i] = items[i].d
	}
	return out
}

// Deliver appends an envelope made elsewhere (replay, artobs deliver) to
// every sink; sinks that hold its id report Duplicate. The envelope must be
// a fixed point of redaction: one holding values redaction would remove is
// refused (ErrNotRedacted).
func (e *Emitter) Deliver(ctx context.Context, env *Envelope) Delivery {
	if e == nil || len(e.sinks) == 0 {
		return Delivery{Envelope: env}
	}
	return e.DeliverBatch(ctx, []*Envelope{env})[0]
}

// DeliverBatch is Deliver for several envelopes, in order, with one write
// per sink.
func (e *Emitter) DeliverBatch(ctx context.Context, envs []*Envelope) []Delivery {
	out := make([]Delivery, len(envs))
	if e == nil || len(e.sinks) == 0 {
		for i, env := range envs {
			out[i].Envelope = env
		}
		return out
	}
	items := make([]item, len(envs))
	for i, env := range envs {
		it := &items[i]
		switch {
		case ctx.Err() != nil:
			it.d, it.skip = e.fail(fmt.Errorf("event %s not delivered: %w", env.id, context.Cause(ctx))), true
		default:
			if err := CheckRedacted(e.red, env); err != nil {
				it.d, it.skip = e.fail(err), true
			} else {
				it.env = env
			}
		}
	}
	e.deliver(ctx, items)
	for i := range items {
		out[i] = items[i].d
	}
	return out
}

// item is one event on its way through deliver.
type item struct {
	env  *Envelope // given (Deliver) or sealed in deliver (Emit)
	p    *prepared
	d    Delivery
	skip bool // refused before delivery; d holds why
}

type prepared struct {
	h     header
	attrs []byte
	sum   redact.Summary
	timed bool // the Draft had a time of its own: replayable
}

func (e *Emitter) prepare(d *Draft) (prepared, error) {
	var p prepared
	if err := d.Validate(); err != nil {
		return p, err
	}
	var paths []redact.Path
	for _, s := range d.Sensitive {
		path, _ := redact.ParsePath(s) // validated
		paths = append(paths, path)
	}
	t := d.Time
	p.timed = !t.IsZero()
	if t.IsZero() {
		t = e.now()
	}
	p.h = header{
		subject:     e.red.Text(d.Subject, &p.sum),
		typ:         e.red.Text(d.Type, &p.sum),
		correlation: e.red.Text(d.Correlation, &p.sum),
		causation:   e.red.Text(d.Causation, &p.sum),
		role:        d.Role,
		time:        formatTime(t),
	}
	p.attrs = e.red.AppendAttrs(nil, d.Attrs, paths, &p.sum)
	return p, nil
}

// Seal redacts d and seals it with seq, without sinks or sequencing: the
// pure transformation behind Emit, for tests and filters.
func (e *Emitter) Seal(d Draft, seq uint64) (*Envelope, error) {
	p, err := e.prepare(&d)
	if err != nil {
		return nil, err
	}
	return seal(p.h, seq, p.attrs, p.sum), nil
}

// maxReplayProbe bounds the sequence numbers tried for one Draft.
const maxReplayProbe = 1024

// replayed is the envelope a sequencing sink already holds for p, sealed
// under one of its subject's sequence numbers, or nil. A stream emitted
// again arrives in the same order, so the numbers are tried from the one
// after the subject's last match; after a miss the subject's later Drafts
// are taken as new and not probed again. Called under e.mu.
func (e *Emitter) replayed(p *prepared, began []sequencer) *Envelope {
	subject := p.h.subject
	var last uint64
	for _, s := range began {
		last = max(last, s.lastSeq(subject))
	}
	from := max(e.cursor[subject], 1)
	for k := from; k <= last && k < from+maxReplayProbe; k++ {
		env := seal(p.h, k, p.attrs, p.sum)
		for _, s := range began {
			if s.holds(env.id) {
				e.cursor[subject] = k + 1
				return env
			}
		}
	}
	e.cursor[subject] = last + 1
	return nil
}

func (e *Emitter) fail(err error) Delivery {
	if e.warn != nil {
		e.warn(err)
	}
	return Delivery{Err: err}
}

// deliver sequences and appends items under the emitter's lock: each
// sequencer sink is locked (and caught up) once, each sink gets the whole
// batch, then durability waits run after the lock is released.
func (e *Emitter) deliver(ctx context.Context, items []item) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		for i := range items {
			if !items[i].skip {
				items[i].d = e.fail(fmt.Errorf("events: %w", ErrClosed))
			}
		}
		return
	}
	e.inflight.Add(1)
	defer e.inflight.Done()
	lockErr := make([]error, len(e.sinks))
	var began []sequencer
	for _, i := range e.seqs {
		s := e.sinks[i].(sequencer)
		if err := s.begin(); err != nil {
			lockErr[i] = err
			continue
		}
		began = append(began, s)
	}
	var envs []*Envelope
	var live []int // item index of each env
	for i := range items {
		it := &items[i]
		if it.skip {
			continue
		}
		if it.env == nil && e.replay && it.p.timed {
			it.env = e.replayed(it.p, began)
		}
		if it.env == nil {
			seq := e.last[it.p.h.subject]
			for _, s := range began {
				seq = max(seq, s.lastSeq(it.p.h.subject))
			}
			it.env = seal(it.p.h, seq+1, it.p.attrs, it.p.sum)
		}
		// A seq is never handed out twice by this emitter, even if every
		// sink failed: the same seq with different content would be a fork.
		e.last[it.env.subject] = max(e.last[it.env.subject], it.env.seq)
		it.d = Delivery{Envelope: it.env, Results: make([]Result, len(e.sinks))}
		envs = append(envs, it.env)
		live = append(live, i)
	}
	type wait struct {
		sink int
		fn   func() error
		of   []int // live positions covered
	}
	var waits []wait
	for si, s := range e.sinks {
		res := func(k int) *Result { return &items[live[k]].d.Results[si] }
		for k := range envs {
			res(k).Sink = s.Name()
		}
		switch {
		case lockErr[si] != nil:
			for k := range envs {
				res(k).Err = lockErr[si]
			}
		case len(envs) == 0:
		default:
			if b, ok := s.(batcher); ok {
				outs, errs, fn := b.appendBatch(ctx, envs)
				var covered []int
				for k := range envs {
					res(k).Outcome, res(k).Err = outs[k], errs[k]
					if errs[k] == nil && outs[k] == Appended {
						covered = append(covered, k)
					}
				}
				if fn != nil {
					waits = append(waits, wait{si, fn, covered})
				}
				continue
			}
			for k, env := range envs {
				res(k).Outcome, res(k).Err = s.Append(ctx, env)
			}
		}
	}
	for _, s := range began {
		s.end()
	}
	e.mu.Unlock()
	for _, w := range waits {
		if err := w.fn(); err != nil {
			for _, k := range w.of {
				items[live[k]].d.Results[w.sink].Err = err
			}
		}
	}
	for _, i := range live {
		d := &items[i].d
		var errs []error
		for r := range d.Results {
			res := &d.Results[r]
			if res.Err == nil {
				continue
			}
			res.Outcome = Failed
			err := res.Err
			var se *SinkError
			if !errors.As(err, &se) {
				err = &SinkError{Sink: res.Sink, Op: "append", Err: err}
			}
			errs = append(errs, err)
		}
		d.Err = errors.Join(errs...)
		if d.Err != nil && e.warn != nil {
			e.warn(d.Err)
		}
	}
}

// Close waits for deliveries in flight (an fsync shared by several
// emitters), then closes every sink. Emit after Close reports ErrClosed.
func (e *Emitter) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.inflight.Wait()
	var errs []error
	for _, s := range e.sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckRedacted reports whether env is a fixed point of r: redacting its
// header and attributes again would change nothing. An envelope that fails
// it was not made by redaction (or was edited after), so it may carry a
// secret; sinks must not take it.
func CheckRedacted(r *redact.Redactor, env *Envelope) error {
	var sum redact.Summary
	for _, s := range []string{env.subject, env.typ, env.correlation, env.causation} {
		r.Text(s, &sum)
	}
	v, err := jsonx.Parse(env.attrs, "event.attrs", jsonx.ParseOptions{})
	if err != nil {
		return err
	}
	m, _ := v.(map[string]any)
	again := r.AppendAttrs(nil, m, nil, &sum)
	if sum.Count() > 0 || string(again) != string(env.attrs) {
		reasons := sum.Reasons()
		if len(reasons) == 0 {
			reasons = map[string]int{"limits": 1}
		}
		ids := slices.Sorted(maps.Keys(reasons))
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("event %s: redaction would remove %s: %w", env.id, strings.Join(ids, ", "), ErrNotRedacted))
	}
	return nil
}

// WarnTo returns a Warn that prints one "TOOL: warning: …" line per
// failure to w (a tool's stderr), the form README.md, "Conventions every tool shares" gives messages.
func WarnTo(tool string, w io.Writer) func(error) {
	var mu sync.Mutex
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s: warning: %s\n", tool, strings.Join(strings.Fields(err.Error()), " "))
	}
}
