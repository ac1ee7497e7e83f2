package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/workspace"
)

// Core is the one implementation of what an agent may do: the actions,
// their refusals, verification debt, observations cut to a bound, the
// step and time budgets, transcript records and AgentEvents. Whoever
// decides drives it one decision at a time: Run's loop asks a provider and
// hands the reply to Take; an MCP server hands each client tool call to
// Call. Neither can reach the workspace or the runner except through it,
// so both get exactly the same enforcement.
//
// A Core is safe for concurrent use: steps are taken one at a time (a
// caller waiting for its turn gives up when its context ends), and Snapshot
// never waits for a running step.
type Core struct {
	cfg        Config
	ed         *workspace.Editor
	tools      *execx.Policy
	verify     *execx.Policy
	verifyProg string
	tr         *transcript.Writer
	ledger     *Ledger
	ev         emitter
	progress   io.Writer
	live       io.Writer
	liveEvery  time.Duration
	deadline   time.Time // zero: none
	// pool lends tool and verify runs a long-lived supervisor (Run makes
	// it and closes it at the end; nil: a supervisor per run).
	pool *execx.Pool

	turn chan struct{} // held for the whole of a step

	mu         sync.Mutex // guards what follows, never held while acting
	step       int
	st         transcript.State
	usage      provider.Usage
	usageKnown bool
	latency    time.Duration
	summary    string
	lastVerify *Outcome
	ended      *Result
}

// ErrEnded refuses a step after the run ended (a finish was accepted or a
// budget ran out).
var ErrEnded = exitcode.Sentinel(exitcode.Conflict, "the run has ended")

// Move is one decision handed to the core, as its decider produced it.
type Move struct {
	// Reply is the decider's raw text: a model's reply, or a client's call
	// as JSON. It is recorded as is.
	Reply string
	// Decision, when set, is what Reply asks for, already decoded (a
	// client's typed call); when nil, Reply is decoded as a Decision and a
	// reply that does not decode is a format refusal.
	Decision *provider.Decision
	// RequestHash names the provider request this answers; empty, it is
	// the sha256 of Reply (a client's call has no request: the call
	// itself is what the records name).
	RequestHash string
	Usage       *provider.Usage
	Latency     time.Duration
	// Dir and Timeout narrow a run_tool: a directory relative to the
	// workspace (confined by the runner) and a timeout no longer than
	// Config.ToolTimeout. They can only narrow: a longer timeout is refused.
	Dir     string
	Timeout time.Duration
	// Truncated says the provider cut Reply off at its token limit: the
	// step is told to the decider and nothing in it is acted on (not a
	// format error).
	Truncated bool
	// Ended says the server ended Reply without a finish reason (see
	// provider.Reply.Ended): told to the decider as a cut reply.
	Ended bool
	// Notes are the provider's notes on the reply, shown on the step
	// event.
	Notes []string
	// Denied lists the decider's own tools its CLI denied (agy): not a
	// decision, refused like a malformed one (refusal tool).
	Denied []string
	// Retries are the failed provider attempts before Reply, recorded
	// with the step.
	Retries []provider.Attempt
}

// Failure names the provider call that ended a run, for the end record
// and the result event; zero when none failed.
type Failure struct {
	Step        int
	RequestHash string
	Retries     []provider.Attempt
}

// OutcomeFinished is the Kind of an accepted finish (it emits no event of
// its own: the result event follows).
const OutcomeFinished EventType = "finished"

// Outcome is what one step did, exactly as recorded and shown.
type Outcome struct {
	Step int
	// Decision is nil when the reply did not decode; FormatErr says why.
	Decision  *provider.Decision
	FormatErr error
	// Kind is EventObservation, EventRejected, EventVerify or
	// OutcomeFinished.
	Kind    EventType
	Refusal Refusal
	// Observation is what the decider is shown, cut to
	// Config.ObservationBytes; Elided counts the bytes cut from it (by the
	// runner and by the cut).
	Observation string
	Elided      int64
	ExitCode    *int
	Passed      *bool
	TimedOut    bool
	Cancelled   bool
	Edit        *workspace.Edit
	// State is the bookkeeping after the step.
	State transcript.State
}

// Snapshot is the core's state between steps.
type Snapshot struct {
	Steps    int
	MaxSteps int
	Edits    int
	Debt     bool
	Verified bool
	// LastVerify is the outcome of the latest verify, nil before any.
	LastVerify *Outcome
	// Ended is the run's result once it ended, else nil.
	Ended *Result
	// Deadline is when the run's wall-clock budget ends (zero: none).
	Deadline time.Time
}

// NewCore checks the configuration and prepares the editor and the
// runner's policies. Unlike Run it does not require a task: a client that
// drives the core brings its own. The transcript's start record is written
// here (Config.Provider names the decider in it). opt.Resume is for Run
// only and is refused here.
func NewCore(cfg Config, opt Options) (*Core, error) {
	if opt.Resume != nil {
		return nil, exitcode.Field(exitcode.Usage, "Resume", "", "only an agent loop can resume a transcript")
	}
	c, err := newCore(cfg, opt)
	if err != nil {
		return nil, err
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func newCore(cfg Config, opt Options) (*Core, error) {
	cfg.Default()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ed, err := workspace.New(cfg.Workspace, workspace.Options{MaxFileBytes: cfg.MaxFileBytes})
	if err != nil {
		return nil, err
	}
	tools, err := toolsPolicy(&cfg, ed.Root())
	if err != nil {
		return nil, err
	}
	if cfg.Policy != nil {
		cfg.Allow = slices.Clone(tools.Allow)
	}
	if err := tools.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	vp, vprog, err := verifyPolicy(tools, cfg.Verify)
	if err != nil {
		return nil, err
	}
	if err := lookPath(vp, vprog); err != nil {
		return nil, err
	}
	if opt.Transcript != nil {
		if err := CheckTranscriptPath(ed.Root(), opt.Transcript.Path()); err != nil {
			return nil, err
		}
	}
	c := &Core{
		cfg: cfg, ed: ed, tools: tools, verify: vp, verifyProg: vprog,
		tr: opt.Transcript, ledger: opt.Ledger, ev: emitter{w: opt.Events, observe: opt.Observe}, progress: opt.Progress,
		live: opt.Live, liveEvery: opt.LiveInterval,
		turn: make(chan struct{}, 1),
	}
	if c.liveEvery <= 0 {
		c.liveEvery = time.Second
	}
	if c.ledger != nil {
		if got := c.ledger.State().Workspace; got != ed.Root() {
			return nil, exitcode.Field(exitcode.Usage, "Ledger", c.ledger.Path(), "the ledger of %s, not of the workspace %s", got, ed.Root())
		}
		// The debt an earlier session left stays open until a verify
		// passes here.
		c.st.Debt = c.ledger.State().Debt
	}
	if cfg.Deadline > 0 {
		c.deadline = time.Now().Add(cfg.Deadline)
	}
	return c, nil
}

func (c *Core) info() *transcript.Run {
	info := &transcript.Run{Task: c.cfg.Task, Workspace: c.ed.Root(), Allow: slices.Clone(c.cfg.Allow), Verify: slices.Clone(c.cfg.Verify), Provider: c.cfg.Provider}
	if info.Allow == nil {
		info.Allow = []string{}
	}
	return info
}

func (c *Core) start() error {
	if c.tr == nil {
		return nil
	}
	rec := transcript.New(transcript.TypeStart)
	rec.Run = c.info()
	return c.tr.Append(rec)
}

// Bound returns ctx bounded by the run's deadline (Config.Deadline from
// when the core was made); the cause of its end is then errDeadline.
func (c *Core) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, c.deadline, errDeadline)
}

// Budget says whether the run must stop before another step: ctx ended
// (cancelled, or the deadline given by Bound), the step limit, or the token
// budget.
func (c *Core) Budget(ctx context.Context) (Status, error) {
	if ctx.Err() != nil {
		return ctxStatus(ctx, c.cfg.Deadline)
	}
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		return StatusTimeout, fmt.Errorf("%w (%v)", errDeadline, c.cfg.Deadline)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.step >= c.cfg.MaxSteps {
		return StatusStepLimit, fmt.Errorf("reached the step limit of %d", c.cfg.MaxSteps)
	}
	if c.cfg.MaxTokens > 0 && c.usageKnown && c.usage.TotalTokens >= c.cfg.MaxTokens {
		return StatusBudgetLimit, fmt.Errorf("used %d tokens, budget %d", c.usage.TotalTokens, c.cfg.MaxTokens)
	}
	return "", nil
}

func (c *Core) lock(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *Core) unlock() { <-c.turn }

// Take performs one step: it decodes the move (a malformed reply is a
// format refusal), records a mutating decision's intent before acting,
// acts, and records the step (transcript first, fsync'd, then events and
// progress). An error means the transcript could not be written or the
// caller's turn never came (ctx ended while another step ran); every
// refusal is an Outcome. Take does not check budgets: a loop checks them
// before asking its provider (Budget); Call checks them itself.
func (c *Core) Take(ctx context.Context, m Move) (*Outcome, error) {
	if err := c.lock(ctx); err != nil {
		return nil, err
	}
	defer c.unlock()
	if c.Snapshot().Ended != nil {
		return nil, ErrEnded
	}
	return c.take(ctx, m)
}

// Call is Take for a client: it waits for its turn, refuses a move once the
// run has ended (ErrEnded), and checks the budgets first; a budget that ran
// out ends the run (transcript end record, result event) and is returned
// as the Result with no Outcome.
func (c *Core) Call(ctx context.Context, m Move) (*Outcome, *Result, error) {
	if err := c.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer c.unlock()
	if s := c.Snapshot(); s.Ended != nil {
		return nil, s.Ended, ErrEnded
	}
	ctx, cancel := c.Bound(ctx)
	defer cancel()
	if status, err := c.Budget(ctx); status != "" {
		if status == StatusCancelled {
			// The caller gave up on this call; the run goes on.
			return nil, nil, err
		}
		res, werr := c.end(status, err, Failure{})
		if werr != nil {
			return nil, nil, werr
		}
		return nil, res, nil
	}
	out, err := c.take(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	if out.Kind == OutcomeFinished {
		res, err := c.end(StatusFinished, nil, Failure{})
		return out, res, err
	}
	return out, nil, nil
}

func (c *Core) take(ctx context.Context, m Move) (*Outcome, error) {
	if m.RequestHash == "" {
		sum := sha256.Sum256([]byte(m.Reply))
		m.RequestHash = "sha256:" + hex.EncodeToString(sum[:])
	}
	c.mu.Lock()
	step, st := c.step+1, c.st
	c.mu.Unlock()
	c.account(&m)

	dec, derr := m.Decision, error(nil)
	if dec == nil {
		dec, derr = provider.DecodeDecision([]byte(m.Reply))
	}
	ev := newEvent(EventStep, step)
	ev.RequestHash, ev.Usage, ev.LatencyMS, ev.Retries, ev.Notes = m.RequestHash, m.Usage, ptr(m.Latency.Milliseconds()), m.Retries, m.Notes
	for _, n := range m.Notes {
		c.progressf("step %d/%d: %s", step, c.cfg.MaxSteps, n)
	}
	if (m.Truncated || m.Ended) && derr == nil {
		// A complete decision is taken whatever the server said about
		// how the reply ended (a one-token decision can come back with
		// finish_reason "length").
		m.Truncated, m.Ended = false, false
	}
	switch {
	case m.Truncated || m.Ended:
		// Cut off at the token limit, or ended by the server: not the
		// decider's format mistake, and nothing in it is acted on.
		ev.Reply = ptr(m.Reply)
		c.ev.emit(ev)
		next := st
		next.Truncations++
		why := "the provider stopped your reply at its token limit"
		if m.Ended {
			why = "the server ended your reply without finishing it (it stops a reply that repeats itself)"
		}
		return c.commit(step, &m, nil, &outcome{kind: EventTruncated, state: next, text: fmt.Sprintf(
			"reply cut off: %s after %d bytes, before the decision was complete; nothing was done. Reply with a shorter decision (for replace_text, a smaller old/new pair; split a large edit into several) (%d of %d cut-off replies in a row allowed).",
			why, len(m.Reply), next.Truncations, MaxTruncations)})
	case len(m.Denied) > 0:
		// The model used its CLI's own tools, which that CLI denied
		// headless: told to the model like a malformed reply; a run of
		// them ends as denied.
		ev.Reply = ptr(m.Reply)
		c.ev.emit(ev)
		next := st
		next.FormatErrors++
		next.Truncations = 0
		return c.commit(step, &m, nil, &outcome{kind: EventRejected, refusal: RefusalTool, state: next, text: fmt.Sprintf(
			"denied: you tried to use your own tools (%s), which are not available here and were denied. Act only through the five actions, replying with one JSON object, for example {\"action\":\"read_file\",\"path\":\"main.go\"} (%d of %d such replies in a row allowed).",
			strings.Join(m.Denied, "; "), next.FormatErrors, c.cfg.MaxFormatErrors)})
	}
	if derr != nil {
		ev.Reply = ptr(m.Reply)
		c.ev.emit(ev)
		next := st
		next.FormatErrors++
		next.Truncations = 0
		out := &outcome{kind: EventRejected, refusal: RefusalFormat, text: fmt.Sprintf(
			"malformed decision: %v. Reply with exactly one JSON object and nothing else, for example {\"action\":\"read_file\",\"path\":\"main.go\"} (%d of %d malformed replies in a row allowed).",
			derr, next.FormatErrors, c.cfg.MaxFormatErrors), state: next}
		o, err := c.commit(step, &m, nil, out)
		if o != nil {
			o.FormatErr = derr
		}
		return o, err
	}
	ev.Action, ev.Decision = dec.Action, dec
	c.ev.emit(ev)

	if dec.Action == provider.ActionFinish && !st.Debt {
		next := st
		next.FormatErrors, next.Truncations = 0, 0
		o, err := c.commit(step, &m, dec, &outcome{kind: OutcomeFinished, state: next})
		if err == nil {
			c.mu.Lock()
			c.summary = dec.Summary
			c.mu.Unlock()
		}
		return o, err
	}
	if mutates(dec.Action) && c.tr != nil {
		// Durable before acting: if the process dies mid-action, a
		// resume knows an edit may have landed and reopens the debt.
		in := transcript.New(transcript.TypeIntent)
		in.Step, in.RequestHash, in.Reply, in.Usage, in.LatencyMS = step, m.RequestHash, ptr(m.Reply), m.Usage, m.Latency.Milliseconds()
		in.Decision = mustJSON(dec)
		if err := c.tr.Append(in); err != nil {
			return nil, err
		}
	}
	stop := c.ticking(step, dec)
	out := c.act(ctx, dec, &m, st)
	stop()
	return c.commit(step, &m, dec, out)
}

func (c *Core) account(m *Move) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency += m.Latency
	if m.Usage != nil {
		u := *m.Usage
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
			m.Usage = &u
		}
		c.usage.Add(&u)
		c.usageKnown = true
	}
}

// commit records a completed step: the transcript record is appended and
// fsync'd first, then the in-memory state and events change.
func (c *Core) commit(step int, m *Move, dec *provider.Decision, out *outcome) (*Outcome, error) {
	obs, cut := Truncate(out.text, c.cfg.ObservationBytes)
	elided := out.elided + cut
	if c.tr != nil {
		rec := transcript.New(transcript.TypeStep)
		rec.Step, rec.RequestHash, rec.Reply = step, m.RequestHash, ptr(m.Reply)
		if dec != nil {
			rec.Decision = mustJSON(dec)
		}
		rec.Outcome, rec.Refusal = string(out.kind), string(out.refusal)
		rec.Observation, rec.Elided, rec.ExitCode = ptr(obs), elided, out.exitCode
		rec.Edited = out.edit != nil
		rec.State = ptr(out.state)
		rec.Usage, rec.LatencyMS = m.Usage, m.Latency.Milliseconds()
		rec.Retries, rec.Denied, rec.Ended = m.Retries, m.Denied, m.Ended
		if err := c.tr.Append(rec); err != nil {
			return nil, err
		}
	}
	if c.ledger != nil {
		if err := c.ledger.save(out.state.Debt, out.state.Verified); err != nil {
			return nil, err
		}
	}
	o := &Outcome{
		Step: step, Decision: dec, Kind: out.kind, Refusal: out.refusal,
		Observation: obs, Elided: elided, ExitCode: out.exitCode, Passed: out.passed,
		TimedOut: out.timedOut, Cancelled: out.cancelled, Edit: out.edit, State: out.state,
	}
	c.mu.Lock()
	c.step, c.st = step, out.state
	if out.kind == EventVerify {
		c.lastVerify = o
	}
	c.mu.Unlock()
	if out.kind != OutcomeFinished {
		ev := newEvent(out.kind, step)
		ev.Observation, ev.Elided, ev.Refusal = ptr(obs), elided, out.refusal
		ev.ExitCode, ev.Passed, ev.Edit, ev.Debt = out.exitCode, out.passed, out.edit, ptr(out.state.Debt)
		c.ev.emit(ev)
	}
	c.progressLine(step, dec, out)
	return o, nil
}

// End ends the run with status (err says why a run that did not finish
// stopped; fail names a provider call that failed): the
// transcript's end record, the result event, the last progress line. It
// is idempotent: a second call returns the first result. The error is a
// transcript or event write failure.
func (c *Core) End(status Status, err error, fail Failure) (*Result, error) {
	c.turn <- struct{}{}
	defer c.unlock()
	return c.end(status, err, fail)
}

func (c *Core) end(status Status, cause error, fail Failure) (*Result, error) {
	if s := c.Snapshot(); s.Ended != nil {
		return s.Ended, nil
	}
	res := c.result(status, cause)
	if c.tr != nil {
		end := transcript.New(transcript.TypeEnd)
		end.Status = string(res.Status)
		end.Step, end.RequestHash, end.Retries = fail.Step, fail.RequestHash, fail.Retries
		if res.Err != nil {
			end.Error = res.Err.Error()
		}
		if err := c.tr.Append(end); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.ended = res
	c.mu.Unlock()
	rev := ResultEvent(res)
	rev.Retries = fail.Retries
	c.ev.emit(rev)
	verified := "not verified"
	if res.Verified {
		verified = "verified"
	}
	c.progressf("%s after %s, %s, %s%s", res.Status, plural(res.Steps, "step"), plural(res.Edits, "edit"), verified, errSuffix(res.Err))
	return res, c.ev.err
}

func (c *Core) result(s Status, err error) *Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &Result{
		Status: s, Steps: c.step, Edits: c.st.Edits, Debt: c.st.Debt,
		Verified: c.st.Verified && !c.st.Debt, Latency: c.latency, Summary: c.summary, Err: err,
	}
	if c.usageKnown {
		u := c.usage
		res.Usage = &u
	}
	return res
}

// Snapshot returns the state between steps; during a step it is the state
// before it.
func (c *Core) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{
		Steps: c.step, MaxSteps: c.cfg.MaxSteps, Edits: c.st.Edits, Debt: c.st.Debt,
		Verified: c.st.Verified && !c.st.Debt, LastVerify: c.lastVerify, Ended: c.ended,
		Deadline: c.deadline,
	}
}

// Config returns the run's configuration with defaults filled in.
func (c *Core) Config() Config { return c.cfg }

// Root is the workspace's canonical root.
func (c *Core) Root() string { return c.ed.Root() }

// ticking shows, on the live writer (a terminal), how long a running
// tool or verify has been at it, one overwritten line per interval, and
// clears it when the step ends; it returns what stops it.
func (c *Core) ticking(step int, dec *provider.Decision) func() {
	if c.live == nil || (dec.Action != provider.ActionRunTool && dec.Action != provider.ActionVerify) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(c.liveEvery)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-done:
				if shown {
					fmt.Fprint(c.live, "\r\x1b[K")
				}
				return
			case now := <-t.C:
				fmt.Fprintf(c.live, "\r\x1b[Kartagent: step %d/%d %s: running… %ds", step, c.cfg.MaxSteps, dec, int(now.Sub(start).Round(time.Second)/time.Second))
				shown = true
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func mutates(a provider.Action) bool {
	return a == provider.ActionReplaceText || a == provider.ActionRunTool || a == provider.ActionVerify
}

func mustJSON(d *provider.Decision) json.RawMessage {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings only
	}
	return b
}

func ctxStatus(ctx context.Context, deadline time.Duration) (Status, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, errDeadline) {
		return StatusTimeout, fmt.Errorf("%w (%v)", errDeadline, deadline)
	}
	return StatusCancelled, cause
}
