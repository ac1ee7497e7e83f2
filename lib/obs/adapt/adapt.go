// Package adapt turns the work of other art packages into obs Drafts: a
// task runner around execx (task.started / task.finished), a goal store
// around lib/goal (before/after snapshots of each update), and handoff
// drafts between the roles Brain, Orchestrator, Dispatcher, Worker and
// Runtime.
//
// It is an adapter layer, not a state machine: it records what the wrapped
// code did and returns that code's results and errors untouched. Emitting
// never changes the outcome of the work (a sink failure goes to the
// Emitter's Warn), and the terminal event of a run is emitted on a context
// detached from the caller's, so cancelling the work does not cancel the
// record of it.
//
// Drafts carry metadata, never payloads: a task's program, argument count,
// limits and result counters, not its argument values or output; a goal's
// revision, phase, checklist progress and sealed phases, not its texts.
package adapt

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// Event types the adapters emit.
const (
	TypeTaskStarted       = "task.started"
	TypeTaskFinished      = "task.finished"
	TypeGoalCreated       = "goal.created"
	TypeGoalUpdated       = "goal.updated"
	TypeGoalUpdateRefused = "goal.update_refused"
	TypeHandoff           = "handoff"
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
// code DESIGN.md §2 gives that ending. ctx is the caller's context: a run
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
	}
	if p != nil {
		iso := string(p.Isolation)
		if iso == "" {
			iso = string(execx.IsolationNone)
		}
		attrs["isolation"] = iso
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

// RunFunc is execx.Run's signature.
type RunFunc func(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error)

// TaskRunner wraps a runner (execx.Run by default) with task.started and
// task.finished events. Its Run has execx.Run's signature, so it drops in
// where execx.Run is called.
type TaskRunner struct {
	Emitter *obs.Emitter
	// Run is the wrapped runner; nil is execx.Run.
	Run RunFunc
	// Subject names the task's stream; nil is TaskSubject.
	Subject func(*execx.Task) string
	// Correlation links the task to the work it is part of (a queue, a run).
	Correlation string
	// Role overrides the role of both events (default runtime).
	Role obs.Role
}

// RunTask runs t and records it. The Result and error are the runner's,
// untouched. task.finished is emitted on context.WithoutCancel(ctx) and
// names task.started as its causation.
func (r TaskRunner) RunTask(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error) {
	run := r.Run
	if run == nil {
		run = execx.Run
	}
	started := r.decorate(TaskStarted(t, p), t, "")
	d := r.Emitter.Emit(ctx, started)
	res, err := run(ctx, p, t, opt)
	cause := ""
	if d.Envelope != nil {
		cause = d.Envelope.ID()
	}
	r.Emitter.Emit(context.WithoutCancel(ctx), r.decorate(TaskFinished(ctx, t, res, err), t, cause))
	return res, err
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
	return d
}

// Handoff is work passing from one role to another: the Brain handing a
// plan to the Orchestrator, the Dispatcher handing a task to a Worker, a
// Worker handing a process to the Runtime.
type Handoff struct {
	From, To obs.Role
	// Subject is the work handed over ("task/…", "goal/…", "agent/…").
	Subject string
	// Reason says why, in a few words.
	Reason      string
	Correlation string
	Causation   string
	// Attrs are extra attributes (redacted like any others).
	Attrs map[string]any
}

// Draft is the handoff as a draft of type "handoff" from From's role.
func (h Handoff) Draft() obs.Draft {
	attrs := map[string]any{}
	for k, v := range h.Attrs {
		attrs[k] = v
	}
	attrs["from"] = string(h.From)
	attrs["to"] = string(h.To)
	if h.Reason != "" {
		attrs["reason"] = h.Reason
	}
	return obs.Draft{Subject: h.Subject, Type: TypeHandoff, Role: h.From, Correlation: h.Correlation, Causation: h.Causation, Attrs: attrs}
}

// Emit records the handoff and returns the event id ("" if not recorded),
// for the receiving side to name as its causation.
func (h Handoff) Emit(ctx context.Context, em *obs.Emitter) string {
	d := em.Emit(ctx, h.Draft())
	if d.Envelope == nil {
		return ""
	}
	return d.Envelope.ID()
}
