// Package execobs records execx runs as lib/obs events: one TaskRunner
// around the runner (task.started / task.finished), used by artexec for
// each command and by the queue's observer for each run of an attempt.
//
// It is an adapter layer, not a state machine: it records what the wrapped
// code did and returns that code's results and errors untouched. Emitting
// never changes the outcome of the work (a sink failure goes to the
// Emitter's Warn), and the terminal event of a run is emitted on a context
// detached from the caller's, so cancelling the work does not cancel the
// record of it.
//
// Drafts carry metadata, never payloads: a task's program, argument count,
// limits and result counters, not its argument values or output.
package execobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/netproxy/account"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/vocab"
)

// Event types the adapters emit.
const (
	TypeTaskStarted  = "task.started"
	TypeTaskFinished = "task.finished"
	// TypeTaskNetwork is one decision of the proxy of a task under
	// network allow: a destination allowed or refused, with the reason.
	TypeTaskNetwork = "task.network"
)

// ErrorClass is the typed evidence a terminal event carries about how work
// ended, so a reader can tell a timeout from a cancellation without parsing
// messages.
type ErrorClass string

// Error classes. The empty class is success.
const (
	ClassNone      ErrorClass = ""
	ClassTimeout   ErrorClass = "timeout"   // the task's own timeout or the caller's deadline (124)
	ClassCancelled ErrorClass = "cancelled" // the caller cancelled: signal, artq cancel (130)
	ClassRejected  ErrorClass = "rejected"  // refused before anything started (126, 2)
	ClassError     ErrorClass = "error"     // the runner itself failed (125, 127)
	ClassFailed    ErrorClass = "failed"    // the work ran and failed (non-zero exit)
)

// Classify says how a run ended from its Result and error, and the exit
// code README.md, "Exit codes" gives that ending. ctx is the caller's context: a run
// cut short by the caller's deadline is a timeout, by its cancellation a
// cancellation, even when the runner could not tell them apart.
func Classify(ctx context.Context, res *execx.Result, err error) (ErrorClass, int) {
	if res != nil {
		switch {
		case res.TimedOut || res.Status == execx.StatusTimedOut:
			return ClassTimeout, exitcode.TimedOut
		case res.Cancelled || res.Status == execx.StatusCancelled:
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return ClassTimeout, exitcode.TimedOut
			}
			return ClassCancelled, exitcode.Cancelled
		case res.Status == execx.StatusRejected:
			return ClassRejected, res.CLICode()
		case res.Status == execx.StatusError:
			return ClassError, res.CLICode()
		case res.Status == execx.StatusFailed || res.ExitCode != 0:
			return ClassFailed, res.CLICode()
		}
		return ClassNone, 0
	}
	if err == nil {
		return ClassNone, 0
	}
	switch code := exitcode.Of(err); {
	case errors.Is(err, context.DeadlineExceeded) || code == exitcode.TimedOut:
		return ClassTimeout, exitcode.TimedOut
	case errors.Is(err, context.Canceled) || code == exitcode.Cancelled:
		return ClassCancelled, exitcode.Cancelled
	case code == exitcode.Refused || code == exitcode.Usage:
		return ClassRejected, code
	default:
		return ClassError, code
	}
}

// TaskSubject is the default subject of a task's events: "task/ID", or
// "task/PROGRAM" for a task without an id.
func TaskSubject(t *execx.Task) string {
	if t == nil {
		return "task/" + "unknown"
	}
	if t.ID != "" {
		return "task/" + t.ID
	}
	return "task/" + t.Program
}

// TaskStarted is the draft recorded before a task runs: what will run and
// within which bounds (no argument values, no environment values).
func TaskStarted(t *execx.Task, p *execx.Policy) obs.Draft {
	attrs := map[string]any{}
	if t != nil {
		env := make([]string, 0, len(t.Env.Set))
		for k := range t.Env.Set {
			env = append(env, k)
		}
		slices.Sort(env)
		attrs["program"] = t.Program
		attrs["argc"] = 1 + len(t.Args)
		attrs["dir"] = orDot(t.Dir)
		attrs["context_files"] = len(t.Context)
		attrs["env_allow"] = append([]string{}, t.Env.Allow...)
		attrs["env_set"] = env // names only
		attrs["limits"] = limitsAttrs(t.Limits)
		if t.ID != "" {
			attrs["task_id"] = t.ID
		}
		if tp := t.Env.Set[vocab.EnvTraceparent]; vocab.ValidTraceparent(tp) {
			attrs["traceparent"] = tp
		}
	}
	if p != nil {
		iso := string(p.Isolation)
		if iso == "" {
			iso = string(execx.IsolationNone)
		}
		attrs["isolation"] = iso
		attrs["network"] = string(p.NetworkMode())
	}
	return obs.Draft{Subject: TaskSubject(t), Type: TypeTaskStarted, Role: obs.RoleRuntime, Attrs: attrs}
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func limitsAttrs(l execx.Limits) map[string]any {
	m := map[string]any{}
	dur := func(k string, d time.Duration) {
		if d > 0 {
			m[k] = d.String()
		}
	}
	num := func(k string, n int64) {
		if n > 0 {
			m[k] = n
		}
	}
	dur("timeout", l.Timeout.D())
	dur("kill_after", l.KillAfter.D())
	dur("grace", l.Grace.D())
	num("output_bytes", l.OutputBytes)
	num("context_bytes", l.ContextBytes)
	num("cpu_seconds", l.CPUSeconds)
	num("memory_bytes", l.MemoryBytes)
	num("processes", l.Processes)
	num("file_bytes", l.FileBytes)
	num("open_files", l.OpenFiles)
	return m
}

// TaskFinished is the terminal draft of a task: the Result's counters
// (never its output) and, unless it succeeded, typed error evidence
// {"class": timeout|cancelled|rejected|error|failed, "exit_code": N,
// "message": …} (the message is redacted like any text).
func TaskFinished(ctx context.Context, t *execx.Task, res *execx.Result, err error) obs.Draft {
	attrs := map[string]any{}
	if res != nil {
		enforced := append([]string{}, res.Isolation.Enforced...)
		attrs["program"] = res.Program
		attrs["status"] = string(res.Status)
		attrs["exit_code"] = res.ExitCode
		attrs["timed_out"] = res.TimedOut
		attrs["cancelled"] = res.Cancelled
		attrs["duration_ms"] = res.DurationMS
		attrs["output_bytes"] = res.OutputBytes
		attrs["output_truncated"] = res.OutputTruncated
		attrs["output_incomplete"] = res.OutputIncomplete
		attrs["isolation"] = map[string]any{"backend": string(res.Isolation.Backend), "enforced": enforced}
		attrs["rusage"] = map[string]any{"user_ms": res.Rusage.UserMS, "sys_ms": res.Rusage.SysMS, "max_rss_kb": res.Rusage.MaxRSSKB}
		if res.Signal != "" {
			attrs["signal"] = res.Signal
		}
		if n := res.Network; n != nil {
			net := map[string]any{"mode": string(n.Mode)}
			if n.Mode == execx.NetworkAllow {
				net["allowed"], net["refused"] = len(n.Allowed)+n.AllowedOmitted, len(n.Refused)+n.RefusedOmitted
			}
			attrs["network"] = net
		}
	} else if t != nil {
		attrs["program"] = t.Program
		attrs["status"] = string(execx.StatusError)
	}
	if class, code := Classify(ctx, res, err); class != ClassNone {
		ev := map[string]any{"class": string(class), "exit_code": code}
		switch {
		case res != nil && res.Error != "":
			ev["message"] = res.Error
		case err != nil:
			ev["message"] = err.Error()
		case class == ClassTimeout || class == ClassCancelled:
			if c := context.Cause(ctx); c != nil {
				ev["message"] = c.Error()
			}
		}
		attrs["error"] = ev
	}
	return obs.Draft{Subject: TaskSubject(t), Type: TypeTaskFinished, Role: obs.RoleRuntime, Attrs: attrs}
}

// TaskNetwork is the draft of one proxy decision: the destination, and
// why it was refused (the reason is redacted like any text).
func TaskNetwork(t *execx.Task, d account.Decision) obs.Draft {
	attrs := map[string]any{"host": d.Host, "port": d.Port, "allowed": d.Allowed}
	if d.Reason != "" {
		attrs["reason"] = d.Reason
	}
	return obs.Draft{Subject: TaskSubject(t), Type: TypeTaskNetwork, Role: obs.RoleRuntime, Attrs: attrs}
}

// TaskRunner wraps a runner (execx.Run by default) with task.started and
// task.finished events. Its RunTask has execx.Run's signature, so it drops
// in where execx.Run is called: artexec wraps each command in one, and the
// queue's observer wraps each run of an attempt in one (with Emit, Decorate
// and Started), so the two events are made in one place.
type TaskRunner struct {
	Emitter *obs.Emitter
	// Run is the wrapped runner; nil is execx.Run.
	Run execx.RunFunc
	// Subject names the task's stream; nil is TaskSubject.
	Subject func(*execx.Task) string
	// Correlation links the task to the work it is part of (a queue, a run).
	Correlation string
	// Role overrides the role of both events (default runtime).
	Role obs.Role
	// Traceparent is the caller's W3C trace context (artexec's own
	// TRACEPARENT), recorded in task.started when the task sets none: a
	// standalone run makes no span, but its events name the trace that
	// started it.
	Traceparent string
	// Decorate, if set, completes each draft before it is emitted (the
	// queue adds the attempt, the step and the workspace).
	Decorate func(*obs.Draft)
	// Emit, if set, emits instead of Emitter and returns the event's id
	// ("" if not delivered): for a caller that completes drafts itself
	// (the queue's subject, correlation and causation chain).
	Emit func(context.Context, obs.Draft) string
	// Started, if set, learns the id of task.started before the run
	// starts (the worker passes it to the task as ART_CAUSATION).
	Started func(id string)
	// WallTime records, for a run that returned no Result, the wall time
	// the runner took as duration_ms.
	WallTime bool
}

// RunTask runs t and records it. The Result and error are the runner's,
// untouched. task.finished is emitted on context.WithoutCancel(ctx) and
// names task.started as its causation.
func (r TaskRunner) RunTask(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error) {
	run := r.Run
	if run == nil {
		run = execx.Run
	}
	start := time.Now()
	started := TaskStarted(t, p)
	if _, ok := started.Attrs["traceparent"]; !ok && vocab.ValidTraceparent(r.Traceparent) {
		started.Attrs["traceparent"] = r.Traceparent
	}
	cause := r.emit(ctx, r.decorate(started, t, ""))
	if cause != "" && r.Started != nil {
		r.Started(cause)
	}
	if prev := opt.OnNetwork; p != nil && p.NetworkMode() == execx.NetworkAllow {
		opt.OnNetwork = func(d account.Decision) {
			if prev != nil {
				prev(d)
			}
			r.emit(context.WithoutCancel(ctx), r.decorate(TaskNetwork(t, d), t, cause))
		}
	}
	res, err := run(ctx, p, t, opt)
	fin := r.decorate(TaskFinished(ctx, t, res, err), t, cause)
	if res == nil && r.WallTime {
		fin.Attrs["duration_ms"] = time.Since(start).Milliseconds()
	}
	r.emit(context.WithoutCancel(ctx), fin)
	return res, err
}

func (r TaskRunner) emit(ctx context.Context, d obs.Draft) string {
	if r.Emit != nil {
		return r.Emit(ctx, d)
	}
	del := r.Emitter.Emit(ctx, d)
	if del.Envelope == nil {
		return ""
	}
	return del.Envelope.ID()
}

func (r TaskRunner) decorate(d obs.Draft, t *execx.Task, cause string) obs.Draft {
	if r.Subject != nil {
		d.Subject = r.Subject(t)
	}
	if r.Role != "" {
		d.Role = r.Role
	}
	d.Correlation = r.Correlation
	d.Causation = cause
	if r.Decorate != nil {
		r.Decorate(&d)
	}
	return d
}
