// Package queueobs records a queue and its workers as lib/obs events: the
// queue's own transitions through a Backend wrapper, the worker's runs
// through worker.Hooks. It is the one place that knows both the queue and
// obs, so neither lib/queue nor lib/obs imports the other.
package queueobs

import (
	"context"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/execx/execobs"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// Observer records a queue's events as obs drafts: every event appended
// through Backend (enqueue, claim, trace, terminal, cancel, retry,
// recovery) becomes "queue.<type>" (started is "queue.claimed", trace
// "queue.traced"), and the worker's runs become execobs's task.started and
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

// Backend wraps b so that every event it appends is emitted once the
// append is durable (never before: an event that is not in the log did not
// happen). A nil Observer returns b.
func (o *Observer) Backend(b queue.Backend) queue.Backend {
	if o == nil {
		return b
	}
	return &observedBackend{Backend: b, o: o}
}

type observedBackend struct {
	queue.Backend
	o *Observer
}

// Unwrap is the backend observed (for backend-specific extras such as the
// file backend's state index).
func (b *observedBackend) Unwrap() queue.Backend { return b.Backend }

func (b *observedBackend) Append(ctx context.Context, ps []queue.Proposal) ([]*queue.Event, error) {
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
		d.Subject = queue.Correlation(o.name, task)
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
func QueueDraft(ev *queue.Event) obs.Draft {
	typ := string(ev.Type)
	switch ev.Type {
	case queue.EventStarted:
		typ = "claimed"
	case queue.EventTrace:
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
	case queue.EventEnqueued:
		attrs["max_attempts"] = ev.MaxAttempts
		attrs["program"] = gjson.GetBytes(ev.Manifest, "program").Str
		attrs["argc"] = 1 + len(gjson.GetBytes(ev.Manifest, "args").Array())
		if spec, err := queue.DecodeRunSpec(ev.Run); err == nil && len(ev.Run) > 0 {
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
	case queue.EventTrace:
		if ev.Trace != nil {
			attrs["trace"] = traceAttrs(ev.Trace)
			attrs["outcome"] = string(ev.Trace.Outcome())
		}
	case queue.EventTruncated:
		attrs["offset"], attrs["bytes"] = ev.Offset, ev.Bytes
	case queue.EventCompacted:
		attrs["through"] = ev.Through
	}
	return obs.Draft{Type: "queue." + typ, Time: ev.Time, Attrs: attrs}
}

func traceAttrs(t *queue.Trace) map[string]any {
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

// Runner wraps one run of an attempt (worker.Hooks) in the task runner
// that records it: task.started, with the attempt, the step and the
// workspace, whose id the run gets as ART_CAUSATION; then task.finished
// with execobs's typed error evidence, on a context that outlives the
// run's cancellation. Both join the task's causation chain.
func (o *Observer) Runner(r *worker.Run, next execx.RunFunc) execx.RunFunc {
	if o == nil {
		return next
	}
	return execobs.TaskRunner{
		Run:      next,
		WallTime: true,
		Emit:     func(ctx context.Context, d obs.Draft) string { return o.emit(ctx, r.Task.ID, d) },
		Started:  func(id string) { r.Task.Env.Set[worker.EnvCausation] = id },
		Decorate: func(d *obs.Draft) {
			d.Attrs["attempt"] = r.Attempt
			d.Attrs["step"] = r.Step
			if d.Type == execobs.TypeTaskStarted {
				d.Attrs["workspace"] = workspaceAttrs(r.Workspace)
			}
		},
	}.RunTask
}

func workspaceAttrs(ws worker.Workspace) map[string]any {
	w := map[string]any{"mode": string(ws.Mode)}
	if ws.Dir != "" {
		w["dir"] = ws.Dir
	}
	if ws.Mode == queue.WorkspaceCopy {
		w["files"], w["bytes"], w["skipped"] = ws.Files, ws.Bytes, ws.Skipped
	}
	if ws.Prepare > 0 {
		w["prepare_ms"] = ws.Prepare.Milliseconds()
	}
	return w
}

// AttemptDone drops a finished attempt's causation chain (worker.Hooks).
func (o *Observer) AttemptDone(task string) { o.forget(task) }

var _ worker.Hooks = (*Observer)(nil)
