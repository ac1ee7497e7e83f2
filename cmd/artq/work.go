package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/promserve"
	"github.com/art-runtime/art/lib/obs/tracectx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/backends"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/queuemetrics"
	"github.com/art-runtime/art/lib/queue/queuetrace"
	"github.com/art-runtime/art/lib/queue/stateindex"
	"github.com/art-runtime/art/lib/queue/worker"
)

// WorkCmd runs tasks.
type WorkCmd struct {
	Once        bool          `name:"once" xor:"mode" help:"Run at most one task, then exit."`
	Drain       bool          `name:"drain" xor:"mode" help:"Exit once nothing is queued and this worker's tasks are done (for cron)."`
	Concurrency int           `name:"concurrency" short:"j" default:"1" placeholder:"N" help:"Tasks to run at once."`
	Poll        time.Duration `name:"poll" default:"1s" placeholder:"D" help:"Longest time before a cancel request or a dead worker's task is noticed."`
	OutputDir   string        `name:"output-dir" placeholder:"DIR" help:"Keep each attempt's whole captured output in DIR/TASK.ATTEMPT.out (0600); DIR must be outside the workspace. Without it only a failed attempt's last 4 KiB are kept (redacted, for 'artq status ID')."`
	Lease       time.Duration `name:"lease" default:"30s" placeholder:"D" help:"Worker lease for backends that heartbeat (NATS); the file backend's lease is a lock that dies with the process."`
	Quiet       bool          `name:"quiet" short:"q" help:"Print no line per task transition (warnings and errors still go to stderr)."`
	LogFormat   string        `name:"log-format" enum:"text,json" default:"text" placeholder:"text|json" help:"Format of the per-transition lines on stderr: text (one logfmt line) or json (one object a line)."`
	ExitCode    bool          `name:"exit-code" help:"Exit 1 when any task this worker finished failed or was cancelled (like git diff --exit-code), so a set -e script stops."`
	Metrics     string        `name:"metrics" placeholder:"[HOST]:PORT" help:"Serve Prometheus metrics on http://HOST:PORT/metrics while working (HOST defaults to 127.0.0.1; name another address to expose them)."`
	Keep        string        `name:"keep-workspaces" enum:"failed,always,never" default:"failed" placeholder:"failed|always|never" help:"Which per-attempt workspaces (tasks enqueued with --workspace-mode copy or worktree) stay once the result is recorded: failed (default: removed when the task succeeded, kept otherwise for inspection), always or never."`

	Policy              string   `name:"policy" placeholder:"FILE" group:"Policy" help:"Policy document for every task; the flags below can only narrow it."`
	Allow               []string `name:"allow" placeholder:"NAME" names:"" group:"Policy" help:"Program that may run (bare name, repeatable). Required without --policy."`
	Workspace           string   `name:"workspace" placeholder:"DIR" group:"Policy" help:"Workspace root tasks cannot leave (default: the current directory)."`
	Isolation           string   `name:"isolation" placeholder:"none|landlock|strict|seatbelt" enum:",none,landlock,strict,seatbelt" default:"" group:"Policy" help:"Isolation backend."`
	IsolationBestEffort bool     `name:"isolation-best-effort" group:"Policy" help:"Run with the isolation this machine can enforce instead of failing the task."`
	Network             string   `name:"network" placeholder:"host|allow|loopback|none" enum:",host,allow,loopback,none" default:"" group:"Policy" help:"Network every task reaches (artexec run --network; with --policy: only a narrower one)."`
	AllowHost           []string `name:"allow-host" placeholder:"HOST[:PORT]" sep:"none" group:"Policy" help:"Destination a --network allow task may reach through art's proxy (repeatable; implies --network allow)."`
}

// Help shows examples.
func (c *WorkCmd) Help() string {
	return `Opens the queue (cutting a torn tail, recovering tasks whose worker died:
a traced attempt gets its trace's result and never runs again, an untraced
one is requeued under the same attempt number, a cancel-requested one is
cancelled), then claims the oldest queued task, runs it through the bounded
runner under the policy, and appends its trace and then its result.

Exit status: 0 when the worker did its job, whatever the tasks' results
(failed tasks are data: see 'artq status'), unless --exit-code: then 1 when
any task it finished failed or was cancelled; 130 on SIGINT/SIGTERM, after
cancelling its running tasks and leaving them to recovery (requeued, same
attempt, when the next worker opens the queue); 125 when the log cannot be
read or written; 2 for a bad policy or flags.

It logs like a daemon: one line per task transition on stderr (time,
worker id, task, attempt, state, duration, reason) and a last line of its
own, event=stopped, with the worker's counts; -q prints none,
--log-format json one object a line (the last with "event":"stopped"). A failed attempt's output tail
(4 KiB, redacted) is kept for 'artq status ID'.

Each task sees ARTQ_TASK_ID and ARTQ_ATTEMPT in its environment: use them as
idempotency keys, since an attempt interrupted before its trace was synced
runs again under the same number. It also sees ART_CORRELATION
(queue/NAME/task/ID) and, with --events, ART_CAUSATION (its task.started
event), which artagent --events records in its own events.

A task enqueued with --workspace-mode copy or worktree runs in its own tree,
QUEUEDIR/work/ID-ATTEMPT (outside the workspace), with that tree as its workspace;
--keep-workspaces says which trees stay. A task enqueued with --acceptance
succeeds only if that command, run by the worker in the same tree after the
task's command exits 0, passes too. Cancelling a task kills every process
of it. With --events, every change and run is recorded as redacted events;
a sink failure is a warning, never a failed task. With --events
otlphttp://HOST:PORT (or ART_EVENTS) the events go to an OpenTelemetry
collector as log records, and each attempt is a trace: an artq.attempt span
with children for its run and acceptance, whose context each task gets as
TRACEPARENT (artagent continues it). --metrics serves Prometheus metrics
(docs/observability.md).

Example:
  artq work --drain --allow make --allow go --workspace ~/src/app
  artq work --drain --exit-code --allow make --workspace .   # set -e stops on a failed task
  artq work --policy /etc/art/policy.json --concurrency 4 --output-dir /var/log/artq
  artq work --drain --policy agents.json --events jsonl:events.jsonl --keep-workspaces always
  artq work --policy agents.json --events otlphttp://127.0.0.1:4318 --metrics :9464
  artq work --allow go --isolation strict --allow-host proxy.golang.org --allow-host sum.golang.org
  */5 * * * *  artq work --drain --policy /etc/art/policy.json`
}

// Run works.
func (c *WorkCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	switch {
	case c.Concurrency < 1:
		return exitcode.Errorf(exitcode.Usage, "--concurrency: must be at least 1, got %d", c.Concurrency)
	case c.Poll <= 0:
		return exitcode.Errorf(exitcode.Usage, "--poll: must be positive")
	case c.Lease <= 0:
		return exitcode.Errorf(exitcode.Usage, "--lease: must be positive")
	}
	pol, err := worker.Policy(c.Policy, execx.Narrowing{
		Allow:               c.Allow,
		Workspace:           c.Workspace,
		Isolation:           execx.Isolation(c.Isolation),
		IsolationBestEffort: c.IsolationBestEffort,
		Network:             execx.NetworkMode(c.Network),
		AllowHosts:          c.AllowHost,
	})
	if err != nil {
		return err
	}
	bc, err := f.config(g, false)
	if err != nil {
		return err
	}
	// A NATS worker rides out a server outage as long as its lease lasts.
	bc.Ctx, bc.Lease = ctx, c.Lease
	// A bad or busy --metrics address fails before the queue is touched.
	var metricsLn net.Listener
	if c.Metrics != "" {
		if metricsLn, err = promserve.Listen(c.Metrics); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	o, exp, closeEvents, err := openEventsTraced(std, g, f, obs.RoleWorker, true)
	if err != nil {
		return err
	}
	defer closeEvents()
	b, err := backends.Open(bc)
	if err != nil {
		return err
	}
	defer b.Close()
	q, err := queue.Open(ctx, o.Backend(b))
	if err != nil {
		return err
	}
	cfg := worker.Config{
		Policy: pol, Concurrency: c.Concurrency, Poll: c.Poll, Lease: c.Lease,
		OutputDir: c.OutputDir, Mode: worker.Serve,
		Keep: worker.Keep(c.Keep), Hooks: o, Queue: f.name(g), ID: worker.NewID(),
		Warn: warnIn(obs.WarnTo("artq", std.Err), c.FieldFlags()),
	}
	if exp != nil {
		// Spans go where the events' OTLP sink goes; an incoming
		// TRACEPARENT (a CI job's span) is every attempt's parent.
		parent := tracectx.FromEnv(context.WithoutCancel(ctx), os.Getenv)
		// The span hooks go first: the run's TRACEPARENT is set before
		// its task.started event records it.
		cfg.Hooks = worker.Join(queuetrace.New(exp.Tracer(), parent, cfg.Queue, cfg.ID), o)
	}
	switch {
	case c.Once:
		cfg.Mode = worker.Once
	case c.Drain:
		cfg.Mode = worker.Drain
	}
	if cfg.TailDir, err = f.tailDir(g); err != nil {
		return err
	}
	// Copy mode's per-attempt trees beside the queue, outside the
	// workspace every shared-mode task can write.
	if cfg.WorkDir, err = f.localDir(g, "work"); err != nil {
		return err
	}
	if !c.Quiet {
		cfg.Log = transitionLogger(std.Err, c.LogFormat == "json")
	}
	var m *queuemetrics.Metrics
	if c.Metrics != "" {
		m = queuemetrics.New(cfg.Queue, func(ctx context.Context) (queue.Summary, error) { return queueDepth(ctx, q) })
		defer promserve.Serve(metricsLn, m.Handler(), func(err error) { fmt.Fprintf(std.Err, "artq: warning: --metrics: %v\n", err) })()
		cfg.Hooks = worker.Join(cfg.Hooks, m)
		cfg.Log = m.Log(cfg.Log)
	}
	stopIndex := stateindex.Keep(ctx, q, indexInterval, func(err error) { warnIndex(std, err) })
	stats, err := worker.Work(ctx, q, cfg)
	stopIndex()
	if m != nil && errors.Is(err, worker.ErrLeaseLost) {
		m.LeaseLost()
	}
	if !c.Quiet {
		logStopped(std.Err, c.LogFormat == "json", cfg.ID, stats)
	}
	if err == nil && c.ExitCode && stats.Failed+stats.Cancelled > 0 {
		return exitcode.Quiet(exitcode.Failed)
	}
	return err
}

// queueDepth counts the queue's tasks by state for the metrics: from the
// state index of a file queue (what artq status reads, without a replay),
// else from the worker's own view of the log.
func queueDepth(ctx context.Context, q *queue.Queue) (queue.Summary, error) {
	if fb, ok := q.Backend().(*file.Backend); ok {
		if v, err := stateindex.Load(ctx, fb.Dir()); err == nil {
			defer v.Close()
			return v.Summary(), nil
		}
	}
	var s queue.Summary
	err := q.View(ctx, func(st *queue.State) error { s = queue.SummaryOf(st); return nil })
	return s, err
}

// indexInterval is how often a worker looks whether the state index status
// reads has fallen far enough behind the log to be rewritten.
const indexInterval = 10 * time.Second

// logTime is the transition lines' clock: UTC, milliseconds, sortable.
const logTime = "2006-01-02T15:04:05.000Z"

// logStopped prints the worker's last line, an event of its own (not a
// task's): its id and what it did.
func logStopped(w io.Writer, asJSON bool, id string, stats worker.Stats) {
	now := time.Now().UTC()
	if asJSON {
		_ = writeJSONLine(w, map[string]any{"time": now, "worker": id, "event": "stopped",
			"claimed": stats.Claimed, "succeeded": stats.Succeeded, "failed": stats.Failed,
			"cancelled": stats.Cancelled, "interrupted": stats.Interrupted})
		return
	}
	fmt.Fprintf(w, "%s artq: worker=%s event=stopped claimed=%d succeeded=%d failed=%d cancelled=%d left_to_recovery=%d\n",
		now.Format(logTime), id, stats.Claimed, stats.Succeeded, stats.Failed, stats.Cancelled, stats.Interrupted)
}

// transitionLogger prints one line per task transition, as a daemon logs:
// time, worker, task, attempt, state, duration (finished only) and reason (when
// there is one), as logfmt text or as one JSON object a line.
func transitionLogger(w io.Writer, asJSON bool) func(worker.Transition) {
	var mu sync.Mutex
	return func(tr worker.Transition) {
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			m := map[string]any{"time": tr.Time.UTC(), "worker": tr.Worker, "event": "task", "task": tr.Task, "attempt": tr.Attempt, "state": tr.State}
			if tr.State.Terminal() {
				m["duration_ms"] = tr.Duration.Milliseconds()
			}
			if tr.Reason != "" {
				m["reason"] = tr.Reason
			}
			_ = writeJSONLine(w, m)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s artq: worker=%s task=%s attempt=%d state=%s", tr.Time.UTC().Format(logTime), tr.Worker, tr.Task, tr.Attempt, tr.State)
		if tr.State.Terminal() {
			fmt.Fprintf(&b, " duration=%s", tr.Duration)
		}
		if tr.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", strconv.Quote(tr.Reason))
		}
		b.WriteByte('\n')
		_, _ = io.WriteString(w, b.String())
	}
}
