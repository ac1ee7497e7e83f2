package main

import (
	"bufio"
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/stateindex"
	"github.com/art-runtime/art/lib/words"
)

// EnqueueCmd adds tasks.
type EnqueueCmd struct {
	ID          string `name:"id" placeholder:"ID" help:"Task id (letters, digits, - and _). Enqueueing the same id with the same manifest again succeeds without a second task; with a different manifest it exits 3. Default: a generated, time-ordered id."`
	MaxAttempts int    `name:"max-attempts" default:"1" placeholder:"N" help:"Attempts the task may use in all through explicit 'artq retry' (default 1: no retry). A crash never uses one up."`
	Manifest    string `name:"manifest" placeholder:"FILE|-" help:"Read the Task manifest from FILE (- for stdin). With --batch: read the batch from FILE."`
	Batch       bool   `name:"batch" help:"Read Task manifests as JSON Lines (stdin, or --manifest FILE) and enqueue them all in one synced append: all or none, also across a crash. Prints one summary line; -v or -o json print every task."`
	Verbose     bool   `name:"verbose" short:"v" help:"With --batch: print every task (its id, or its TaskStatus JSON with -o json) instead of the one summary line."`
	IdemKey     string `name:"idempotency-key" placeholder:"KEY" help:"Derive the ids of tasks that name none from KEY and their position N in the batch, blank lines not counted (k + 16 hex digits of SHA-256(KEY) + -N), so running the same batch again with the same KEY enqueues nothing twice (exit 0); other tasks under the same KEY exit 3."`

	WorkspaceMode   string        `name:"workspace-mode" enum:"shared,copy,worktree" default:"shared" placeholder:"shared|copy|worktree" group:"Run" help:"Where the task runs: shared (the worker's workspace, default), copy (a fresh copy of --workspace-source per attempt) or worktree (a fresh detached git worktree of its HEAD per attempt), in the worker's QUEUEDIR/work/ID-ATTEMPT."`
	WorkspaceSource string        `name:"workspace-source" placeholder:"DIR" group:"Run" help:"copy/worktree: the directory or git repository to start from, relative to the worker's workspace (default: the workspace itself)."`
	Acceptance      string        `name:"acceptance" placeholder:"'WORDS'" group:"Run" help:"A command the worker runs itself, in the task's workspace, after the task's command exits 0; the task succeeds only if it passes too. Split like shell words; no shell runs it. Its program must be allowed by the worker's policy."`
	Timeout         time.Duration `name:"timeout" placeholder:"D" group:"Limits" help:"The task's wall-clock limit (the manifest's limits.timeout; default 10m): then SIGTERM to every process of the task. A worker's policy refuses a limit above its own."`
	Env             []string      `name:"env" placeholder:"K=V" sep:"none" group:"Limits" help:"Set a variable in the task's environment (env.set; repeatable). The worker's policy must allow the name; the value is stored in the log, so never a secret."`
	OutputBytes     int64         `name:"output-bytes" placeholder:"N" group:"Limits" help:"Keep at most N bytes of the task's output, head and tail (limits.output_bytes; default 1 MiB)."`

	Command []string `arg:"" optional:"" passthrough:"partial" name:"program" help:"PROGRAM and its arguments, after --."`
}

// Help shows examples.
func (c *EnqueueCmd) Help() string {
	return `Appends an enqueued event (fsync'd before artq returns) and prints the
task's status: TaskStatus JSON, or just the id with -o text. Nothing runs
until a worker ('artq work') claims the task. Invalid input (unknown field,
bad duration, missing program) exits 2 and leaves the log untouched.

--batch reads one Task manifest a line (JSON Lines; blank lines skipped)
as a stream and appends them all in one synced append: all or none. A bad
line refuses the whole batch (exit 2) naming the line and the field, e.g.
"line 5: task.limits.timout: unknown field"; a task already in the queue
with the same manifest is left as it is (another manifest under its id
exits 3). It prints one summary line,
  batch: 100000 tasks, 100000 new, 0 already enqueued (seq 1-100000)
or, with -v or -o json, one line per task in input order: its id (-o
text) or its TaskStatus JSON.

--workspace-mode copy|worktree gives every attempt a fresh tree of its own
made from --workspace-source; --acceptance names a command the worker runs
itself after the task's command succeeds. Both are stored with the task
(the same id with other values exits 3).

--timeout, --env K=V and --output-bytes set the task's manifest fields
(limits.timeout, env.set, limits.output_bytes; over a --manifest's own):
the worker's policy narrows them as it does a manifest's, refusing a limit
above its maximum or a variable it does not allow. A task that times out
records why: "timed out: limit 5s, ran 5.2s". --events jsonl:PATH records the
enqueue as a redacted event.

Example:
  artq enqueue -- make test
  artq enqueue --timeout 5m --env GOFLAGS=-count=1 --output-bytes 65536 -- go test ./...
  id=$(artq enqueue -o text --max-attempts 3 -- sh deploy.sh staging)
  artq enqueue --id nightly-2026-11-30 --manifest task.json   # idempotent
  artq enqueue --batch < tasks.jsonl                           # one Task a line; one summary line
  artq enqueue --batch -v -o text < tasks.jsonl > ids.txt      # one id a line
  artq enqueue --batch --idempotency-key nightly-2026-11-30 < tasks.jsonl  # safe to re-run
  artq enqueue --id fix-1 --workspace-mode copy --workspace-source calc \
    --acceptance 'go test ./...' -- \
    artagent run --workspace . --task 'make go test pass' --provider mock \
      --mock-script /srv/fix.jsonl --allow go --verify 'go test ./...'`
}

// Run enqueues.
func (c *EnqueueCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	if c.MaxAttempts < 1 {
		return exitcode.Errorf(exitcode.Usage, "--max-attempts: must be at least 1, got %d", c.MaxAttempts)
	}
	if c.IdemKey != "" && c.ID != "" {
		return exitcode.Errorf(exitcode.Usage, "give --id or --idempotency-key, not both")
	}
	spec, err := c.runSpec()
	if err != nil {
		return err
	}
	batch, err := c.requests(std, spec)
	if err != nil {
		return err
	}
	o, closeEvents, err := openEvents(std, g, f, obs.RoleDispatcher, false)
	if err != nil {
		return err
	}
	defer closeEvents()
	b, err := f.openObserved(g, o)
	if err != nil {
		return err
	}
	defer b.Close()
	q := queue.New(b)
	res, err := q.EnqueueBatch(ctx, batch)
	if err != nil {
		return err
	}
	err = c.print(std, g, res)
	// The state index is written after the output, from the batch's own
	// events (and the index as it stood before them), not from a replay.
	warnIndex(std, stateindex.AfterBatch(ctx, q, res))
	return err
}

// print writes what an enqueue did: the summary line of a batch, or a
// line (-o json: a status) per task.
func (c *EnqueueCmd) print(std cli.IO, g *cli.Globals, res *queue.BatchResult) error {
	w := bufio.NewWriterSize(std.Out, 1<<16)
	if c.Batch && !c.Verbose && g.Output != "json" {
		fmt.Fprintln(w, batchSummary(res))
		return w.Flush()
	}
	asJSON := g.JSON(std)
	err := res.Each(func(e queue.Enqueued) error {
		if asJSON {
			return writeJSONLine(w, &e.Status)
		}
		_, err := fmt.Fprintln(w, e.Status.ID)
		return err
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// batchSummary is the line --batch prints instead of a line per task:
// "batch: 3 tasks, 2 new, 1 already enqueued (seq 5-6)".
func batchSummary(r *queue.BatchResult) string {
	noun := "tasks"
	if r.Requests == 1 {
		noun = "task"
	}
	s := fmt.Sprintf("batch: %d %s, %d new, %d already enqueued", r.Requests, noun, r.Created, r.Requests-r.Created)
	if r.Created > 0 {
		s += fmt.Sprintf(" (seq %d-%d)", r.FirstSeq, r.LastSeq)
	}
	return s
}

// runSpec is the run spec the flags ask for, checked (exit 2) before the
// log is opened.
func (c *EnqueueCmd) runSpec() (*queue.RunSpec, error) {
	spec := &queue.RunSpec{Workspace: queue.WorkspaceMode(c.WorkspaceMode), Source: c.WorkspaceSource}
	if c.Acceptance != "" {
		argv, err := words.Command(c.Acceptance)
		if err != nil {
			return nil, fmt.Errorf("--acceptance: %w", err)
		}
		spec.Acceptance = argv
	}
	if err := spec.Validate(); err != nil {
		if spec.Mode() == queue.WorkspaceShared && spec.Source != "" {
			return nil, exitcode.Errorf(exitcode.Usage, "--workspace-source needs --workspace-mode copy or worktree")
		}
		return nil, err
	}
	return spec, nil
}

// requests decodes and checks everything before the log is opened, so bad
// input never touches it. A batch is read as a stream (queue.ReadBatch):
// only each task's stored form is kept, never the whole input.
func (c *EnqueueCmd) requests(std cli.IO, spec *queue.RunSpec) (*queue.Batch, error) {
	if len(c.Command) > 0 && c.Command[0] == "--" { // kong keeps the separator
		c.Command = c.Command[1:]
	}
	switch {
	case c.Batch && c.ID != "":
		return nil, exitcode.Errorf(exitcode.Usage, "--batch takes ids from the manifests, not --id")
	case c.Batch && len(c.Command) > 0:
		return nil, exitcode.Errorf(exitcode.Usage, "--batch reads manifests: give no PROGRAM")
	case c.Manifest != "" && len(c.Command) > 0:
		return nil, exitcode.Errorf(exitcode.Usage, "give either --manifest or PROGRAM after --, not both")
	case !c.Batch && c.Manifest == "" && len(c.Command) == 0:
		return nil, exitcode.Errorf(exitcode.Usage, "nothing to enqueue: give PROGRAM ARGS after --, --manifest FILE, or --batch")
	}
	if c.Batch && (c.Timeout != 0 || len(c.Env) > 0 || c.OutputBytes != 0) {
		return nil, exitcode.Errorf(exitcode.Usage, "--timeout, --env and --output-bytes set one task's fields: with --batch put them in each manifest")
	}
	if c.Batch {
		src := c.Manifest
		if src == "" {
			src = "-"
		}
		r, err := openInput(std, src)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return queue.ReadBatch(r, queue.BatchOptions{
			MaxAttempts: c.MaxAttempts, IdempotencyKey: c.IdemKey, Run: spec,
			Check: func(line int, t *execx.Task) error { return runnable(fmt.Sprintf("line %d", line), t.Program) },
		})
	}
	req := queue.EnqueueRequest{ID: c.ID, MaxAttempts: c.MaxAttempts, Run: spec}
	if c.ID != "" {
		if err := queue.ValidName("--id", c.ID); err != nil {
			return nil, err
		}
	}
	var err error
	if len(c.Command) > 0 && c.Command[0] == "" {
		return nil, exitcode.Errorf(exitcode.Refused, "program \"\": empty: no policy can allow it")
	}
	if len(c.Command) > 0 {
		req.Task, err = queue.ArgvTask(c.Command)
	} else {
		var data []byte
		if data, err = readInput(std, c.Manifest); err != nil {
			return nil, err
		}
		req.Task, err = queue.DecodeManifest(data)
	}
	if err != nil {
		return nil, err
	}
	if err := runnable("task", req.Task.Program); err != nil {
		return nil, err
	}
	if err := c.limits(req.Task); err != nil {
		return nil, err
	}
	reqs := []queue.EnqueueRequest{req}
	if c.IdemKey != "" {
		if err := queue.IdempotentIDs(c.IdemKey, reqs); err != nil {
			return nil, err
		}
	}
	var b queue.Batch
	if err := b.Add(reqs[0]); err != nil {
		return nil, err
	}
	return &b, nil
}

// limits sets the task flags' fields over the manifest's and checks the
// result (exit 2 naming the flag, before the log is opened).
func (c *EnqueueCmd) limits(t *execx.Task) error {
	switch {
	case c.Timeout < 0:
		return exitcode.Errorf(exitcode.Usage, "--timeout %s: must be positive", c.Timeout)
	case c.OutputBytes < 0:
		return exitcode.Errorf(exitcode.Usage, "--output-bytes %d: must be positive", c.OutputBytes)
	}
	if c.Timeout > 0 {
		t.Limits.Timeout = jsonx.Duration(c.Timeout)
	}
	if c.OutputBytes > 0 {
		t.Limits.OutputBytes = c.OutputBytes
	}
	for _, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return exitcode.Errorf(exitcode.Usage, "--env %q: want NAME=VALUE", kv)
		}
		if t.Env.Set == nil {
			t.Env.Set = map[string]string{}
		}
		t.Env.Set[k] = v
	}
	return t.Validate()
}

// runnable refuses (exit 126) at enqueue time a task no policy could ever
// run: a program that is not a bare name (a path such as ./deploy.sh) is
// refused by every worker, so queueing it would only make a failure later.
func runnable(what, p string) error {
	if p != "" && !strings.Contains(p, "/") {
		return nil
	}
	return &refusal{msg: fmt.Sprintf("%s: program %q is not a bare program name: no policy can allow it", what, p),
		hint: hintFor(p)}
}

func hintFor(p string) string {
	if p == "" {
		return "name the program after --"
	}
	if rest, ok := strings.CutPrefix(p, "./"); ok && !strings.Contains(rest, "/") {
		return "a script in the workspace runs through its interpreter: -- sh " + rest
	}
	return "give the bare name (" + path.Base(p) + "): the worker looks it up in its policy's path"
}

type refusal struct{ msg, hint string }

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Hint() string  { return e.hint }

// ExitCode implements exitcode.Coder: refused.
func (e *refusal) ExitCode() int { return exitcode.Refused }
