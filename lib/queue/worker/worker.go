package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/execx"
	_ "github.com/art-runtime/art/lib/execx/netallow" // a task's policy may name network allow
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/vocab"
)

// Mode says when a worker stops on its own.
type Mode int

const (
	// Serve runs until the context ends (SIGTERM).
	Serve Mode = iota
	// Once runs at most one task, then stops.
	Once
	// Drain stops when nothing is queued and its own tasks are done: the
	// cron mode.
	Drain
)

// Environment variables the worker sets for every task, so a command can
// make its side effects idempotent per attempt (a crash before the trace is
// synced re-runs the attempt under the same number).
const (
	EnvTaskID  = "ARTQ_TASK_ID"
	EnvAttempt = "ARTQ_ATTEMPT"
)

// watchCoalesce is the shortest time between two catch-ups of a
// worker's watcher: appends closer together than this are read in one
// catch-up. It bounds how late a worker sees a burst's later appends (a
// cancel request, a new task), far below Poll.
const watchCoalesce = 10 * time.Millisecond

// DefaultPoll is the worker's default Poll (its lease defaults to
// queue.DefaultLease).
const DefaultPoll = time.Second

// Environment variables the worker sets for every task (besides EnvTaskID
// and EnvAttempt) so the task's own events join the task's: artagent's
// --events puts them in its envelopes' correlation and causation.
const (
	// EnvCorrelation is the task's correlation id, queue/NAME/task/ID.
	EnvCorrelation = "ART_CORRELATION"
	// EnvCausation is the id of the hooks' task.started event for this
	// run, when the worker has hooks that return one (absent otherwise).
	EnvCausation = "ART_CAUSATION"
	// EnvTraceparent and EnvTracestate carry the W3C trace context of the
	// run's span, when the worker has hooks that make spans
	// (lib/queue/queuetrace): a tool the task runs continues the trace.
	EnvTraceparent = vocab.EnvTraceparent
	EnvTracestate  = vocab.EnvTracestate
)

// Config configures Work.
type Config struct {
	// ID names the worker and its lease; empty means NewID().
	ID     string
	Policy *execx.Policy
	// Concurrency is how many tasks run at once (default 1).
	Concurrency int
	// Poll bounds how long a change (a cancel request, a dead worker's
	// task) can go unnoticed (default 1s). Appends in this process and,
	// on the file backend, in others are usually seen much sooner.
	Poll  time.Duration
	Lease time.Duration
	// OutputDir, if set, receives each attempt's captured output as
	// TASK.ATTEMPT.out (0600). Nothing else keeps output.
	OutputDir string
	Mode      Mode
	// Log, if set, gets one Transition per task the worker claims,
	// finishes or recovers (artq work prints each on stderr).
	Log func(Transition)
	// TailDir, if set, keeps the end of each failed attempt's output,
	// redacted and bounded (MaxTail), as TailDir/TailName(ID, ATTEMPT).
	TailDir string
	// Run defaults to execx.Run.
	Run execx.RunFunc
	// Keep says which per-attempt workspaces (copy and worktree modes)
	// stay once the result is recorded; default KeepFailed.
	Keep Keep
	// WorkDir is where copy- and worktree-mode attempts run, as
	// WorkDir/ID-ATTEMPT (TreePath). It must be outside every tree a task can write (artq
	// uses QUEUEDIR/work): a task that could reach it could swap another
	// attempt's tree for a symlink. Made on first use; empty means a
	// private directory under the system's temp dir.
	WorkDir string
	// Hooks, if set, are told about the worker's runs (the command's and
	// the acceptance's); lib/queue/queueobs records them as task.started
	// and task.finished. The queue's own transitions are not the worker's
	// to report: they are recorded by the backend the queue is built on
	// (queueobs.Observer.Backend).
	Hooks Hooks
	// Queue names the queue in correlation ids (queue/NAME/task/ID), which
	// every task sees as ART_CORRELATION.
	Queue string
	// Warn, if set, is told about what does not fail a task but should not
	// go unnoticed: a workspace that could not be removed.
	Warn func(error)
}

// Stats counts what a worker did.
type Stats struct {
	Claimed     int `json:"claimed"`
	Succeeded   int `json:"succeeded"`
	Failed      int `json:"failed"`
	Cancelled   int `json:"cancelled"`
	Interrupted int `json:"interrupted"` // left to recovery by a shutdown
	Recovered   int `json:"recovered"`   // other workers' tasks recovered
}

// NewID returns a worker id unique on this machine and in practice
// everywhere: host, pid and randomness.
func NewID() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for _, c := range host {
		if c < 128 && (c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b.WriteRune(c)
		}
		if b.Len() >= 40 {
			break
		}
	}
	h := strings.TrimLeft(b.String(), "-_")
	if h == "" {
		h = "w"
	}
	return fmt.Sprintf("%s-%d-%s", h, os.Getpid(), queue.NewID()[20:])
}

// Policy builds the worker's Policy: the file's, narrowed by n, or,
// without a file, one made from n alone (n.Allow is then required, and the
// workspace defaults to the current directory). Its refusals are
// *exitcode.FieldError naming "Policy", "Allow" or "Workspace" (no file
// and no program: errors.Is ErrNoPolicy).
func Policy(file string, n execx.Narrowing) (*execx.Policy, error) {
	if file != "" {
		p, err := execx.LoadPolicy(file)
		if err != nil {
			return nil, err
		}
		return p.Narrow(n)
	}
	if len(n.Allow) == 0 {
		return nil, exitcode.Fieldf(exitcode.Usage, "Allow", "", "work needs %s FILE or at least one %s NAME: say which programs may run",
			exitcode.Ref("Policy"), exitcode.Ref("Allow")).Because(ErrNoPolicy)
	}
	ws := n.Workspace
	if ws == "" {
		ws = "."
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, exitcode.Field(exitcode.Usage, "Workspace", ws, "%w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, exitcode.Field(exitcode.Usage, "Workspace", ws, "not a directory")
	}
	p := &execx.Policy{
		TypeMeta: jsonx.Meta(execx.KindPolicy), Allow: n.Allow, Workspace: abs,
		Isolation: n.Isolation, IsolationBestEffort: n.IsolationBestEffort, Max: n.Max,
		Network: execx.NetworkPolicy{Mode: n.Network, Allow: n.AllowHosts},
	}
	if p.Network.Mode == "" && len(n.AllowHosts) > 0 {
		p.Network.Mode = execx.NetworkAllow
	}
	p.Default()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// ErrLeaseLost is why Work stops when its lease is gone (a NATS worker
// cut off past its lease, a paused process): another worker may now
// recover its tasks.
var ErrLeaseLost = errors.New("lease lost")

func errLeaseLost(worker string) error {
	return exitcode.Wrap(exitcode.Internal, fmt.Errorf("worker %s: %w; running tasks are left to recovery", worker, ErrLeaseLost))
}

// ErrNoPolicy is the refusal of a worker given no policy: no policy
// file and no allowed program (exit 2).
var ErrNoPolicy = exitcode.Sentinel(exitcode.Usage, "worker: no policy")

var (
	errShutdown        = errors.New("worker shutting down")
	errCancelRequested = errors.New("cancel requested")
)

// Work runs tasks from q until its mode says stop or ctx ends. On ctx's end
// (SIGTERM) it stops claiming, cancels its running tasks and appends nothing
// for them: their state is left to recovery, which requeues them under the
// same attempt once this worker's lease is gone. It returns ctx's cause then.
// Tasks that fail are data, not errors: Work returns nil after a drain in
// which every task failed. Errors are the queue's own (exit 125).
func Work(ctx context.Context, q *queue.Queue, cfg Config) (Stats, error) {
	w, err := newWorker(q, cfg)
	if err != nil {
		return Stats{}, err
	}
	if w.outDir != nil {
		defer w.outDir.Close()
	}
	return w.work(ctx)
}

type worker struct {
	q    *queue.Queue
	cfg  Config
	pol  *execx.Policy
	self string

	mu    sync.Mutex
	stats Stats

	// slots are the running claims, keyed by claim. Only the main loop
	// adds and removes them, under smu; the watcher reads them under smu
	// to cancel tasks whose cancel was requested.
	smu   sync.Mutex
	slots map[uint64]*slot

	outDir *os.Root // Config.OutputDir, opened once (nil without one)

	// work is WorkDir made and canonical (workDir), once.
	workOnce sync.Once
	workPath string
	workErr  error

	// pool lends the worker's runs long-lived supervisors, one per slot
	// (execx.Pool): made when work starts, closed when it returns.
	pool *execx.Pool
}

// slot is one running claim. Slots are keyed by claim (the started
// event's sequence), never by task id: a task requeued and claimed again
// is a new claim, and the old run's slot stays what stop() cancels.
type slot struct {
	id        string
	attempt   int
	claim     uint64
	cancel    context.CancelCauseFunc
	cancelled bool
}

type finished struct {
	claim uint64
	err   error // the queue failed while recording the result
}

func newWorker(q *queue.Queue, cfg Config) (*worker, error) {
	if cfg.Policy == nil {
		return nil, ErrNoPolicy
	}
	if cfg.ID == "" {
		cfg.ID = NewID()
	}
	if err := queue.ValidName("worker", cfg.ID); err != nil {
		return nil, err
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Lease <= 0 {
		cfg.Lease = queue.DefaultLease
	}
	if cfg.Run == nil {
		cfg.Run = execx.Run
	}
	if cfg.Hooks == nil {
		cfg.Hooks = noHooks{}
	}
	var outDir *os.Root
	if cfg.OutputDir != "" {
		var err error
		if outDir, err = openOutputDir(cfg.OutputDir, cfg.Policy.Workspace); err != nil {
			return nil, err
		}
	}
	switch cfg.Keep {
	case "":
		cfg.Keep = KeepFailed
	case KeepFailed, KeepAlways, KeepNever:
	default:
		return nil, exitcode.Fieldf(exitcode.Usage, "Keep", string(cfg.Keep), "worker: %s %q: want failed, always or never", exitcode.Ref("Keep"), cfg.Keep)
	}
	if cfg.Queue == "" {
		cfg.Queue = "default"
	}
	// The worker gives every task its id, attempt and correlation; the
	// policy must let those names through (they carry only the worker's
	// own values).
	pol := *cfg.Policy
	pol.EnvAllow = slices.Clone(pol.EnvAllow)
	for _, name := range []string{EnvTaskID, EnvAttempt, EnvCorrelation, EnvCausation, EnvTraceparent, EnvTracestate} {
		if !slices.Contains(pol.EnvAllow, name) {
			pol.EnvAllow = append(pol.EnvAllow, name)
		}
	}
	return &worker{q: q, cfg: cfg, pol: &pol, self: cfg.ID, slots: map[uint64]*slot{}, outDir: outDir}, nil
}

// openOutputDir makes the output directory and opens it once: every
// output file is written beneath that descriptor. One inside the
// workspace is refused: a task could replace it with a symlink, and
// reading what the worker saved there would mean trusting the task.
func openOutputDir(dir, ws string) (*os.Root, error) {
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, exitcode.Field(exitcode.Internal, "Workspace", ws, "%w", err)
	}
	// Checked before it is made (nothing is created inside a workspace),
	// and again once it exists.
	for made := false; ; made = true {
		real, err := realPath(dir)
		if err != nil {
			return nil, exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", err)
		}
		if within(realWS, real) {
			return nil, exitcode.Fieldf(exitcode.Usage, "OutputDir", dir, "%s %s is inside the workspace %s, where tasks can write: keep output outside it", exitcode.Ref("OutputDir"), dir, ws)
		}
		if made {
			root, err := os.OpenRoot(real)
			if err != nil {
				return nil, exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", err)
			}
			return root, nil
		}
		if err := fsx.MkdirState(dir); err != nil {
			return nil, exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", err)
		}
	}
}

// realPath is dir absolute with every symlink resolved, as far as it
// exists: the missing tail is joined to its deepest existing ancestor.
func realPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var tail []string
	for {
		real, err := filepath.EvalSymlinks(abs)
		if err == nil {
			return filepath.Join(append([]string{real}, tail...)...), nil
		}
		parent := filepath.Dir(abs)
		if !errors.Is(err, fs.ErrNotExist) || parent == abs {
			return "", err
		}
		tail = append([]string{filepath.Base(abs)}, tail...)
		abs = parent
	}
}

// saveOutput writes one output file beneath the output directory the
// worker opened at start (see openOutputDir).
func (w *worker) saveOutput(name string, data string) error {
	return fsx.WriteFileAt(w.outDir, name, []byte(data), fsx.FileMode)
}

func (w *worker) work(ctx context.Context) (Stats, error) {
	b := w.q.Backend()
	lease, err := b.AcquireLease(ctx, w.self, w.cfg.Lease)
	if err != nil {
		return Stats{}, err
	}
	defer lease.Release()
	w.pool = execx.NewPool(w.cfg.Concurrency)
	defer w.pool.Close() // after every run returned: each path out waits for them

	// Appends and runs are not bound to ctx: a SIGTERM stops claiming and
	// cancels children explicitly, and a result already in hand is still
	// recorded.
	bg := context.WithoutCancel(ctx)
	runCtx, stopRuns := context.WithCancelCause(bg)
	defer stopRuns(errShutdown)

	// A lost lease kills the running children at once, whatever the main
	// loop is doing (a catch-up or recovery can take a request timeout):
	// on NATS the worker kills its tasks within the lease TTL of its last
	// acknowledged renewal, before any other worker may recover them.
	leaseCtx, stopLeaseWatch := context.WithCancel(bg)
	defer stopLeaseWatch()
	go func() {
		select {
		case <-lease.Lost():
			stopRuns(errShutdown)
		case <-leaseCtx.Done():
		}
	}()

	// Wake the loop on appends (ours, and other processes' through the
	// backend's watch) instead of sleeping a whole poll.
	wctx, stopWatch := context.WithCancel(bg)
	changed := make(chan struct{}, 1)
	var watchers sync.WaitGroup
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		pause := time.NewTimer(time.Hour) // one timer for every pause
		pause.Stop()
		defer pause.Stop()
		sleep := func(d time.Duration) bool {
			pause.Reset(d)
			select {
			case <-wctx.Done():
				return false
			case <-pause.C:
				return true
			}
		}
		var seen uint64 // w.q.EventsRead() as of the last look
		for {
			after := w.q.Seq()
			if err := b.Wait(wctx, after); err != nil {
				return
			}
			// Every commit of this process wakes the watch, the
			// worker's own claims, traces and results too: they moved
			// the view on by themselves (the queue applies its own
			// appends), and none of them is news to the worker. Only
			// what the view took from the log (another process's
			// append, read by this catch-up or by a claim's) is looked
			// at. A busy worker commits three times a task, so such a
			// wake counts as one for coalescing (below): the next Wait,
			// from the new position, comes watchCoalesce later and
			// returns at once if another process appended meanwhile.
			if w.q.Seq() > after && w.q.EventsRead() == seen {
				if !sleep(watchCoalesce) {
					return
				}
				continue
			}
			// The catch-up that sees the new events also looks for
			// cancel requests among them: one log read per change, not
			// one here and another in the main loop.
			err := w.q.View(wctx, func(st *queue.State) error {
				seen = w.q.EventsRead()
				return w.seeCancels(st)
			})
			if err != nil && wctx.Err() == nil {
				// Reported by the main loop's own catch-up; back off.
				if !sleep(w.cfg.Poll) {
					return
				}
			}
			select {
			case changed <- struct{}{}:
			default:
			}
			// Every append wakes every worker's watcher, and each wake
			// is a log read (on NATS a stream-info request and a pull):
			// with W workers that is W reads per append, so the work per
			// task grew with the number of workers. A wake within
			// watchCoalesce of the last one waits out the rest of it
			// and catches up once for all of them; a change after a
			// quiet spell is still seen at once.
			if !sleep(watchCoalesce) {
				return
			}
		}
	}()
	defer func() {
		stopWatch()
		watchers.Wait()
	}()

	slots := w.slots // written here only, under w.smu
	done := make(chan finished, w.cfg.Concurrency)
	var runs sync.WaitGroup
	ticker := time.NewTicker(w.cfg.Poll)
	defer ticker.Stop()
	claimed := 0
	mine := make(map[string]bool, w.cfg.Concurrency) // the running tasks' ids, for ClaimN
	var lastRecover time.Time
	var failure error
	look := true // whether this turn reads the state for cancel requests

	stop := func(cause error) {
		for _, s := range slots {
			s.cancel(cause)
		}
		for len(slots) > 0 {
			f := <-done
			w.smu.Lock()
			delete(slots, f.claim)
			w.smu.Unlock()
			if f.err != nil && failure == nil {
				failure = f.err
			}
		}
		runs.Wait()
	}

	for {
		if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
			stop(errShutdown)
			if failure != nil {
				return w.snapshot(), failure
			}
			return w.snapshot(), err
		}
		if !lease.Held() {
			stop(errShutdown)
			return w.snapshot(), errLeaseLost(w.self)
		}
		if failure != nil {
			stop(errShutdown)
			return w.snapshot(), failure
		}
		// See cancel requests for our tasks once a poll: the watcher sees
		// them as soon as their append is seen (seeCancels); this bounds
		// the delay if the watch misses one.
		if look {
			look = false
			if err := w.q.View(bg, w.seeCancels); err != nil {
				stop(errShutdown)
				return w.snapshot(), err
			}
		}
		// Recover tasks of workers that died since we started.
		if time.Since(lastRecover) >= w.cfg.Poll {
			lastRecover = time.Now()
			evs, err := w.q.Recover(bg, w.self)
			if err != nil {
				stop(errShutdown)
				return w.snapshot(), err
			}
			w.count(func(s *Stats) { s.Recovered += len(evs) })
			for _, ev := range evs {
				w.log(Transition{Time: ev.Time, Task: ev.Task, Attempt: ev.Attempt, State: stateOf(ev.Type), Reason: ev.Reason})
			}
		}
		// Claim while there is room, every free slot at once: their
		// started events share one commit (one fsync) on the file backend.
		for len(slots) < w.cfg.Concurrency && (w.cfg.Mode != Once || claimed == 0) {
			// The lease is checked again before every claim: a worker
			// continued after a pause past its lease claims nothing.
			if !lease.Held() {
				stop(errShutdown)
				return w.snapshot(), errLeaseLost(w.self)
			}
			clear(mine)
			for _, s := range slots {
				mine[s.id] = true
			}
			room := w.cfg.Concurrency - len(slots)
			if w.cfg.Mode == Once {
				room = 1
			}
			ts, err := w.q.ClaimN(bg, w.self, mine, room)
			if err != nil {
				stop(errShutdown)
				return w.snapshot(), err
			}
			if len(ts) == 0 {
				break
			}
			for _, t := range ts {
				queue.Failpoint("after-claim")
				w.log(Transition{Time: time.Now().UTC(), Task: t.ID, Attempt: t.Attempt, State: queue.StateRunning})
				claimed++
				w.count(func(s *Stats) { s.Claimed++ })
				tctx, cancel := context.WithCancelCause(runCtx)
				s := &slot{id: t.ID, attempt: t.Attempt, claim: t.Claim, cancel: cancel}
				w.smu.Lock()
				slots[t.Claim] = s
				w.smu.Unlock()
				runs.Add(1)
				go func() {
					defer runs.Done()
					defer cancel(nil)
					done <- finished{claim: t.Claim, err: w.run(tctx, bg, t, lease)}
				}()
			}
		}
		if len(slots) == 0 && (w.cfg.Mode == Once || w.cfg.Mode == Drain) {
			return w.snapshot(), nil
		}
		select {
		case f := <-done:
			w.smu.Lock()
			delete(slots, f.claim)
			w.smu.Unlock()
			if f.err != nil {
				failure = f.err
			}
			// Collect every run that ended meanwhile, so that their slots
			// are refilled by one claim.
			for more := true; more; {
				select {
				case f := <-done:
					w.smu.Lock()
					delete(slots, f.claim)
					w.smu.Unlock()
					if f.err != nil && failure == nil {
						failure = f.err
					}
				default:
					more = false
				}
			}
		case <-changed:
		case <-ticker.C:
			look = true
		case <-ctx.Done():
		case <-lease.Lost():
		}
	}
}

// seeCancels cancels every running slot whose task has a cancel request
// for its claim (called with the queue's state current).
func (w *worker) seeCancels(st *queue.State) error {
	w.smu.Lock()
	defer w.smu.Unlock()
	for _, s := range w.slots {
		t := st.Task(s.id)
		if t != nil && t.State == queue.StateRunning && t.Claim == s.claim && t.CancelRequested && !s.cancelled {
			s.cancelled = true
			s.cancel(errCancelRequested)
		}
	}
	return nil
}

func (w *worker) count(fn func(*Stats)) {
	w.mu.Lock()
	fn(&w.stats)
	w.mu.Unlock()
}

func (w *worker) snapshot() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// run runs one claimed attempt — in its own workspace when the task asks
// for one, then its acceptance command when the command succeeded — and
// records its trace, then its terminal event. A shutdown records nothing.
// The returned error is the queue's own failure to record.
func (w *worker) run(tctx, bg context.Context, t *queue.Task, lease queue.Lease) error {
	defer w.cfg.Hooks.AttemptDone(t.ID)
	task, err := execx.DecodeTask(t.Manifest)
	var spec *queue.RunSpec
	if err == nil {
		task.ID = t.ID
		spec, err = queue.DecodeRunSpec(t.Run)
	}
	var res *execx.Result
	var tw *taskWorkspace
	var accept *queue.Trace
	if err == nil {
		tw, err = w.prepareWorkspace(tctx, t, spec)
	}
	if err == nil {
		env := maps.Clone(task.Env.Set)
		if env == nil {
			env = map[string]string{}
		}
		env[EnvTaskID] = t.ID
		env[EnvAttempt] = strconv.Itoa(t.Attempt)
		env[EnvCorrelation] = queue.Correlation(w.cfg.Queue, t.ID)
		task.Env.Set = env
		res, err = w.runOne(tctx, tw, task, t.Attempt, "command")
		// Even when a cancel arrived as the command finished: an acceptance
		// that cannot run is recorded as cancelled, never skipped (the task
		// must not succeed on the command's word alone).
		if err == nil && res.Status == execx.StatusSucceeded && len(spec.Acceptance) > 0 {
			accept = w.accept(tctx, tw, task, spec, t.Attempt)
		}
	}
	queue.Failpoint("after-run")
	cause := context.Cause(tctx)
	if errors.Is(cause, errShutdown) {
		// Leave the attempt to recovery: without a trace it is requeued
		// under the same attempt number, and its workspace is made again.
		w.count(func(s *Stats) { s.Interrupted++ })
		return nil
	}
	if err != nil {
		res = execx.ErrorResult(task, err)
		if errors.Is(cause, errCancelRequested) {
			res.Status, res.ExitCode, res.Cancelled = execx.StatusCancelled, exitcode.Cancelled, true
		}
	}
	tr := queue.TraceOf(res)
	decideCancelRace(tr)
	tr.Acceptance = accept
	if w.cfg.OutputDir != "" {
		// The result is recorded whatever happens to its output: an
		// output that cannot be saved (a full disk) is noted in the
		// trace, never a reason to run the command again.
		if werr := w.saveOutput(fmt.Sprintf("%s.%d.out", t.ID, t.Attempt), res.Output); werr != nil {
			tr.OutputSaved, tr.OutputError = new(bool), outputError(werr)
			if w.cfg.Warn != nil {
				w.cfg.Warn(fmt.Errorf("task %s attempt %d: %w (the result is recorded without it)", t.ID, t.Attempt,
					exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", werr)))
			}
		}
	}
	term, err := w.q.Finish(bg, lease, w.self, t, tr)
	if err != nil {
		return err
	}
	if rerr := w.releaseWorkspace(bg, tw, spec, term == queue.EventSucceeded); rerr != nil && w.cfg.Warn != nil {
		w.cfg.Warn(fmt.Errorf("task %s attempt %d: workspace %s not removed: %w", t.ID, t.Attempt, tw.rel, rerr))
	}
	switch term {
	case queue.EventSucceeded:
		w.count(func(s *Stats) { s.Succeeded++ })
	case queue.EventFailed:
		w.count(func(s *Stats) { s.Failed++ })
	case queue.EventCancelled:
		w.count(func(s *Stats) { s.Cancelled++ })
	}
	if term != "" {
		reason, ms := tr.Reason, tr.DurationMS
		if a := tr.Acceptance; a != nil {
			ms += a.DurationMS
			if a.Reason != "" {
				reason = "acceptance: " + a.Reason
			}
		}
		if term != queue.EventSucceeded && w.cfg.TailDir != "" {
			if werr := writeTail(w.cfg.TailDir, t.ID, t.Attempt, res); werr != nil && w.cfg.Warn != nil {
				w.cfg.Warn(fmt.Errorf("task %s attempt %d: output tail not kept: %w", t.ID, t.Attempt, werr))
			}
		}
		w.log(Transition{Time: time.Now().UTC(), Task: t.ID, Attempt: t.Attempt, State: stateOf(term),
			Duration: time.Duration(ms) * time.Millisecond, Reason: reason})
	}
	return nil
}

// runOne runs one command of an attempt through the runner under the
// attempt's workspace policy, recording task.started and task.finished.
// The command learns the id of its task.started event (ART_CAUSATION), so
// the events it emits itself name it as their cause.
func (w *worker) runOne(ctx context.Context, tw *taskWorkspace, task *execx.Task, attempt int, step string) (*execx.Result, error) {
	r := &Run{Task: task, Policy: tw.pol, Attempt: attempt, Step: step, Workspace: tw.describe()}
	res, err := w.cfg.Hooks.Runner(r, w.cfg.Run)(ctx, tw.pol, task, execx.Options{Supervised: true, Pool: w.pool})
	return res, err
}

// accept runs the task's acceptance command through a fresh runner call,
// in the same workspace, dir, environment and limits as the command: the
// worker's own check, not the task's word. Its program must be allowed by
// the worker's policy like any other. A run that could not start is
// recorded as such (rejected, error), so the task fails.
func (w *worker) accept(ctx context.Context, tw *taskWorkspace, task *execx.Task, spec *queue.RunSpec, attempt int) *queue.Trace {
	at := &execx.Task{
		TypeMeta: task.TypeMeta, ID: task.ID,
		Program: spec.Acceptance[0], Args: slices.Clone(spec.Acceptance[1:]),
		Dir: task.Dir, Env: execx.TaskEnv{Allow: task.Env.Allow, Set: maps.Clone(task.Env.Set)},
		Limits: task.Limits,
	}
	delete(at.Env.Set, EnvCausation)
	res, err := w.runOne(ctx, tw, at, attempt, "acceptance")
	if err != nil {
		res = execx.ErrorResult(at, err)
		if errors.Is(context.Cause(ctx), errCancelRequested) {
			res.Status, res.ExitCode, res.Cancelled = execx.StatusCancelled, exitcode.Cancelled, true
		}
	}
	tr := queue.TraceOf(res)
	decideCancelRace(tr)
	if w.cfg.OutputDir != "" {
		if werr := w.saveOutput(fmt.Sprintf("%s.%d.acceptance.out", task.ID, attempt), res.Output); werr != nil {
			tr.OutputSaved, tr.OutputError = new(bool), outputError(werr)
			if w.cfg.Warn != nil {
				w.cfg.Warn(exitcode.Field(exitcode.Internal, "OutputDir", "", "%w", werr))
			}
		}
	}
	return tr
}

// outputError is the one-line reason recorded in a trace whose output
// could not be saved.
func outputError(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// decideCancelRace settles a cancel that arrives as the command exits on
// its own. A command that exited with status 0 and no signal was not
// stopped by the cancel (the runner's SIGTERM found it gone, or it chose
// to finish cleanly): its attempt succeeded, with exit code 0, whatever
// order the runner saw the two in. Only a command the cancel's signal
// ended (or that exited non-zero) is recorded cancelled. A success carries
// no reason (only unsuccessful traces do): the cancel's is dropped.
func decideCancelRace(tr *queue.Trace) {
	if tr.Status == execx.StatusCancelled && tr.ExitCode == 0 && tr.Signal == "" {
		tr.Status, tr.Reason = execx.StatusSucceeded, ""
	}
}
