package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/workspace"
)

// Options are the caller's side of a run: where events, progress and the
// transcript go.
type Options struct {
	// Events receives AgentEvent JSON Lines (nil: none).
	Events io.Writer
	// Progress receives one human line per step (nil: none).
	Progress io.Writer
	// Transcript, if set, receives a record per step, fsync'd before the
	// loop moves on.
	Transcript *transcript.Writer
	// Resume continues the run recorded in Records (read from the same
	// file Transcript appends to).
	Resume *Resume
	// Observe, if set, is called with every event (after it is written to
	// Events), for event sinks such as lib/obs.
	Observe func(*Event)
	// Live, if set (a terminal), shows a running tool or verify as one
	// line rewritten every LiveInterval (default 1s), "running… 12s", and
	// cleared when the step ends: a long step is not silence.
	Live         io.Writer
	LiveInterval time.Duration
	// Ledger, if set, carries the workspace's verification debt across
	// sessions: the core starts with the debt it holds and records the
	// debt after every step (see OpenLedger). For NewCore (MCP sessions).
	Ledger *Ledger
}

// Resume is a transcript's records and the torn bytes dropped from its end.
type Resume struct {
	Records []transcript.Record
	Dropped int64
}

// runner is a provider driving the core: it asks for one decision per
// step and hands each reply to Core.Take.
type runner struct {
	c       *Core
	p       provider.Provider
	history []provider.Turn
	// set when a provider call fails, for the end record
	failStep    int
	failHash    string
	failRetries []provider.Attempt
}

// Run runs the loop until the model finishes or a limit, a provider error
// or cancellation ends it. An error means the run could not start (bad
// configuration, exit 2; missing workspace, 4; resume conflict, 3) or the
// transcript could not be written (125); every other ending is a Result.
func Run(ctx context.Context, cfg Config, p provider.Provider, opt Options) (*Result, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCore(cfg, opt)
	if err != nil {
		return nil, err
	}
	// One step at a time: one supervisor serves every tool and verify run.
	c.pool = execx.NewPool(1)
	defer c.pool.Close()
	r := &runner{c: c, p: p}
	if opt.Resume != nil {
		if err := r.restore(opt.Resume, c.info()); err != nil {
			return nil, err
		}
	} else if err := c.start(); err != nil {
		return nil, err
	}

	ctx, cancel := c.Bound(ctx)
	defer cancel()
	status, why, err := r.loop(ctx)
	if err != nil {
		return nil, err
	}
	return c.End(status, why, Failure{Step: r.failStep, RequestHash: r.failHash, Retries: r.failRetries})
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// loop returns how the run ended and why; an error is a transcript
// failure.
func (r *runner) loop(ctx context.Context) (Status, error, error) {
	for {
		if status, err := r.c.Budget(ctx); status != "" {
			return status, err, nil
		}
		req := r.request()
		hash := req.Hash()
		start := time.Now()
		reply, err := r.p.Decide(ctx, req)
		if err != nil {
			r.failStep, r.failHash = req.Step, hash
			var pe *provider.Error
			if errors.As(err, &pe) {
				r.failRetries = pe.Retries
			}
			return r.classify(ctx, err), err, nil
		}
		if reply.Latency <= 0 {
			reply.Latency = time.Since(start)
		}
		out, err := r.c.Take(ctx, Move{
			Reply: reply.Text, RequestHash: hash, Usage: reply.Usage, Latency: reply.Latency,
			Truncated: reply.Truncated, Ended: reply.Ended, Notes: reply.Notes, Denied: reply.Denied, Retries: reply.Retries,
		})
		if err != nil {
			return "", nil, err
		}
		var canon []byte
		if out.Decision != nil {
			canon = mustJSON(out.Decision)
		}
		r.history = append(r.history, provider.NewTurn(out.Step, reply.Text, canon, string(out.Kind), string(out.Refusal), out.ExitCode, out.Observation))
		switch {
		case out.Kind == OutcomeFinished:
			return StatusFinished, nil, nil
		case out.Kind == EventTruncated && out.State.Truncations >= MaxTruncations:
			return StatusTruncated, fmt.Errorf("%d replies in a row cut off at the provider's reply token limit", out.State.Truncations), nil
		case out.Refusal == RefusalTool && out.State.FormatErrors >= r.c.cfg.MaxFormatErrors:
			return StatusDenied, fmt.Errorf("%d replies in a row without a decision, the last one using denied tools: %s", out.State.FormatErrors, strings.Join(reply.Denied, "; ")), nil
		case out.FormatErr != nil && out.State.FormatErrors >= r.c.cfg.MaxFormatErrors:
			return StatusFormatError, fmt.Errorf("%d malformed decisions in a row; the last: %w", out.State.FormatErrors, out.FormatErr), nil
		}
	}
}

// classify maps a provider failure to the run's status.
func (r *runner) classify(ctx context.Context, err error) Status {
	switch {
	case ctx.Err() != nil:
		s, _ := ctxStatus(ctx, r.c.cfg.Deadline)
		return s
	case errors.Is(err, provider.ErrTimeout):
		return StatusTimeout
	case errors.Is(err, provider.ErrDenied):
		return StatusDenied
	}
	return StatusProviderError
}

func (r *runner) request() *provider.Request {
	req := provider.NewRequest()
	snap := r.c.Snapshot()
	req.Task = r.c.cfg.Task
	req.Step = snap.Steps + 1
	req.MaxSteps = r.c.cfg.MaxSteps
	req.Allow = slices.Clone(r.c.cfg.Allow)
	if req.Allow == nil {
		req.Allow = []string{}
	}
	req.Verify = slices.Clone(r.c.cfg.Verify)
	req.Debt = snap.Debt
	req.History = slices.Clone(r.history)
	if req.History == nil {
		req.History = []provider.Turn{}
	}
	return req
}

// outcome is what an action produced, before truncation.
type outcome struct {
	kind      EventType // observation, rejected, verify, or OutcomeFinished
	refusal   Refusal
	text      string
	elided    int64 // bytes the runner already dropped from tool output
	exitCode  *int
	passed    *bool
	timedOut  bool
	cancelled bool
	edit      *workspace.Edit
	state     transcript.State
}

func (c *Core) progressf(format string, args ...any) {
	if c.progress != nil {
		fmt.Fprintf(c.progress, "artagent: "+format+"\n", args...)
	}
}

func (c *Core) progressLine(step int, dec *provider.Decision, out *outcome) {
	if c.progress == nil {
		return
	}
	what := "malformed reply"
	if out.kind == EventTruncated {
		what = "truncated reply"
	}
	if dec != nil {
		what = dec.String()
	}
	var how string
	switch out.kind {
	case EventRejected:
		how = "rejected (" + string(out.refusal) + ")"
	case EventVerify:
		switch {
		case out.passed != nil && *out.passed:
			how = "verify passed"
		case out.cancelled:
			how = "verify cancelled"
		case out.timedOut:
			how = "verify timed out"
		default:
			how = "verify failed"
		}
	case OutcomeFinished:
		how = "finished"
	case EventTruncated:
		how = "reply cut off at the token limit"
	default:
		how = "ok"
		switch {
		case out.cancelled:
			how = "cancelled"
		case out.timedOut:
			how = "timed out"
		case out.exitCode != nil && *out.exitCode != 0:
			how = fmt.Sprintf("exit %d", *out.exitCode)
		}
		if out.edit != nil {
			how = fmt.Sprintf("edited line %d", out.edit.Line)
		}
	}
	debt := ""
	if out.state.Debt {
		debt = "; debt open"
	}
	c.progressf("step %d/%d %s: %s%s", step, c.cfg.MaxSteps, what, how, debt)
}

// lookPath checks, for a clear error before the first step, that the
// verify program exists in its policy's search path. execx still resolves
// it itself on every run.
func lookPath(p *execx.Policy, name string) error {
	for _, dir := range p.SearchPath() {
		st, err := os.Stat(filepath.Join(dir, name))
		if err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return nil
		}
	}
	return exitcode.Fieldf(exitcode.ProgramNotFound, "Verify", name, "verify: program %q not found in %v", name, p.SearchPath())
}

// CheckTranscriptPath refuses a transcript inside the workspace: the model
// could read it, and edit it (through replace_text or an allowed tool) to
// rewrite the history and the verification debt a resume trusts. Callers
// check before creating the file; Run checks again.
func CheckTranscriptPath(workspace, path string) error {
	root, err := filepath.Abs(workspace)
	if err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return fmt.Errorf("transcript %s: %w", path, err)
	}
	if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return exitcode.Field(exitcode.Usage, "Transcript", path, "inside the workspace, where the model could edit it; keep it outside")
	}
	return nil
}
