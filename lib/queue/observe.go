package queue

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/adapt"
)

// Environment variables the worker sets for every task (besides EnvTaskID
// and EnvAttempt) so the task's own events join the task's: artagent's
// --events puts them in its envelopes' correlation and causation.
const (
	// EnvCorrelation is the task's correlation id, queue/NAME/task/ID.
	EnvCorrelation = "ART_CORRELATION"
	// EnvCausation is the id of the worker's task.started event for this
	// run, when the worker emits events (absent otherwise).
	EnvCausation = "ART_CAUSATION"
)

// Observer records a queue's events as obs drafts: every event appended
// through Backend (enqueue, claim, trace, terminal, cancel, retry,
// recovery) becomes "queue.<type>" (started is "queue.claimed", trace
// "queue.traced"), and the worker's runs become adapt's task.started and
// task.finished. Every draft of a task has subject and correlation
// queue/NAME/task/ID, the attempt in its attrs, and as causation the
// previous event this process emitted for the task, so a worker's events
// form one chain: claimed → task.started → task.finished (→ the
// acceptance's task.started → task.finished) → traced → terminal.
//
// Drafts carry metadata only, like the log's traces: program names and
// counts, never argument values, environment values or output. Emitting
// never fails the work: a sink failure goes to the Emitter's Warn. A nil
// *Observer observes nothing.
type Observer struct {
	em   *obs.Emitter
	name string
	role obs.Role

	mu   sync.Mutex
	last map[string]string // task → id of the last event emitted for it
}

// NewObserver observes queue name through em; role is the role of the
// queue's own events (the worker's, or the dispatcher's for the CLI's
// enqueue, cancel and retry). A nil em gives a nil Observer.
func NewObserver(em *obs.Emitter, name string, role obs.Role) *Observer {
	if em == nil {
		return nil
	}
	return &Observer{em: em, name: name, role: role, last: map[string]string{}}
}

// Correlation is the correlation id of task id in queue name.
func Correlation(name, id string) string { return "queue/" + name + "/task/" + id }

// Backend wraps b so that every event it appends is emitted once the
// append is durable (never before: an event that is not in the log did not
// happen). A nil Observer returns b.
func (o *Observer) Backend(b Backend) Backend {
	if o == nil {
		return b
	}
	return &observedBackend{Backend: b, o: o}
}

type observedBackend struct {
	Backend
	o *Observer
}

func (b *observedBackend) Append(ctx context.Context, ps []Proposal) ([]*Event, error) {
	evs, err := b.Backend.Append(ctx, ps)
	if err == nil {
		// The record of an append that happened is not cancelled with the
		// caller.
		ctx = context.WithoutCancel(ctx)
		for _, ev := range evs {
			b.o.emit(ctx, ev.Task, QueueDraft(ev))
		}
	}
	return evs, err
}

// emit completes d with the queue's subject, correlation and the task's
// causation chain, emits it, and returns its id ("" if it was not
// delivered).
func (o *Observer) emit(ctx context.Context, task string, d obs.Draft) string {
	if o == nil {
		return ""
	}
	if task == "" {
		d.Subject = "queue/" + o.name
	} else {
		d.Subject = Correlation(o.name, task)
		d.Correlation = d.Subject
	}
	if d.Role == "" {
		d.Role = o.role
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	d.Causation = o.last[task]
	del := o.em.Emit(ctx, d)
	if del.Envelope == nil {
		return ""
	}
	id := del.Envelope.ID()
	if task != "" {
		o.last[task] = id
	}
	return id
}

// forget drops a finished task's chain.
func (o *Observer) forget(task string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.last, task)
	o.mu.Unlock()
}

// Emit emits an arbitrary draft for task (the CLI's compact, for one);
// subject, correlation and causation are filled as for the queue's own.
func (o *Observer) Emit(ctx context.Context, task string, d obs.Draft) string {
	return o.emit(ctx, task, d)
}

// QueueDraft is the draft of one queue event: type "queue.<type>" (started
// is "queue.claimed", trace "queue.traced"), the event's time (so the same
// event always gives the same envelope), and its metadata as attrs.
func QueueDraft(ev *Event) obs.Draft {
	typ := string(ev.Type)
	switch ev.Type {
	case EventStarted:
		typ = "claimed"
	case EventTrace:
		typ = "traced"
	}
	attrs := map[string]any{"seq": ev.Seq}
	if ev.Attempt != 0 {
		attrs["attempt"] = ev.Attempt
	}
	if ev.Worker != "" {
		attrs["worker"] = ev.Worker
	}
	if ev.Reason != "" {
		attrs["reason"] = ev.Reason
		if strings.HasPrefix(ev.Reason, "recovered:") {
			attrs["recovered"] = true
		}
	}
	switch ev.Type {
	case EventEnqueued:
		attrs["max_attempts"] = ev.MaxAttempts
		attrs["program"] = gjson.GetBytes(ev.Manifest, "program").Str
		attrs["argc"] = 1 + len(gjson.GetBytes(ev.Manifest, "args").Array())
		if spec, err := DecodeRunSpec(ev.Run); err == nil && len(ev.Run) > 0 {
			run := map[string]any{"workspace": string(spec.Mode())}
			if spec.Source != "" {
				run["source"] = spec.Source
			}
			if len(spec.Acceptance) > 0 {
				run["acceptance_program"] = spec.Acceptance[0]
				run["acceptance_argc"] = len(spec.Acceptance)
			}
			attrs["run"] = run
		}
	case EventTrace:
		if ev.Trace != nil {
			attrs["trace"] = traceAttrs(ev.Trace)
			attrs["outcome"] = string(ev.Trace.Outcome())
		}
	case EventTruncated:
		attrs["offset"], attrs["bytes"] = ev.Offset, ev.Bytes
	case EventCompacted:
		attrs["through"] = ev.Through
	}
	return obs.Draft{Type: "queue." + typ, Time: ev.Time, Attrs: attrs}
}

func traceAttrs(t *Trace) map[string]any {
	m := map[string]any{
		"status": string(t.Status), "exit_code": t.ExitCode, "duration_ms": t.DurationMS,
		"output_bytes": t.OutputBytes, "output_truncated": t.OutputTruncated,
		"output_incomplete": t.OutputIncomplete,
	}
	if t.Signal != "" {
		m["signal"] = t.Signal
	}
	if t.Reason != "" {
		m["reason"] = t.Reason
	}
	if t.Acceptance != nil {
		m["acceptance"] = traceAttrs(t.Acceptance)
	}
	return m
}

// runStarted emits task.started for one run of an attempt (step is
// "command" or "acceptance") and returns its id.
func (o *Observer) runStarted(ctx context.Context, t *execx.Task, p *execx.Policy, attempt int, step string, ws *taskWorkspace) string {
	if o == nil {
		return ""
	}
	d := adapt.TaskStarted(t, p)
	d.Attrs["attempt"] = attempt
	d.Attrs["step"] = step
	if ws != nil {
		w := map[string]any{"mode": string(ws.mode)}
		if ws.rel != "" {
			w["dir"] = ws.rel
		}
		if ws.mode == WorkspaceCopy {
			w["files"], w["bytes"], w["skipped"] = ws.files, ws.bytes, ws.skipped
		}
		if ws.took > 0 {
			w["prepare_ms"] = ws.took.Milliseconds()
		}
		d.Attrs["workspace"] = w
	}
	return o.emit(ctx, t.ID, d)
}

// runFinished emits task.finished (on a context that outlives the run's
// cancellation) with adapt's typed error evidence.
func (o *Observer) runFinished(ctx context.Context, t *execx.Task, res *execx.Result, err error, attempt int, step string, took time.Duration) {
	if o == nil {
		return
	}
	d := adapt.TaskFinished(ctx, t, res, err)
	d.Attrs["attempt"] = attempt
	d.Attrs["step"] = step
	if res == nil {
		d.Attrs["duration_ms"] = took.Milliseconds()
	}
	o.emit(context.WithoutCancel(ctx), t.ID, d)
}
