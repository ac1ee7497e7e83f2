package agent

import (
	"context"
	"encoding/json"
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
}

// Resume is a transcript's records and the torn bytes dropped from its end.
type Resume struct {
	Records []transcript.Record
	Dropped int64
}

type runner struct {
	cfg        Config
	p          provider.Provider
	ed         *workspace.Editor
	tools      *execx.Policy
	verify     *execx.Policy
	verifyProg string
	tr         *transcript.Writer
	ev         emitter
	progress   io.Writer

	step       int
	st         transcript.State
	usage      provider.Usage
	usageKnown bool
	latency    time.Duration
	history    []provider.Turn
	summary    string
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
	ed, err := workspace.New(cfg.Workspace, workspace.Options{MaxFileBytes: cfg.MaxFileBytes})
	if err != nil {
		return nil, err
	}
	tools := toolsPolicy(&cfg, ed.Root())
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
	r := &runner{
		cfg: cfg, p: p, ed: ed, tools: tools, verify: vp, verifyProg: vprog,
		tr: opt.Transcript, ev: emitter{w: opt.Events, observe: opt.Observe}, progress: opt.Progress,
	}
	info := &transcript.Run{Task: cfg.Task, Workspace: ed.Root(), Allow: slices.Clone(cfg.Allow), Verify: slices.Clone(cfg.Verify), Provider: cfg.Provider}
	if info.Allow == nil {
		info.Allow = []string{}
	}
	if opt.Resume != nil {
		if err := r.restore(opt.Resume, info); err != nil {
			return nil, err
		}
	} else if r.tr != nil {
		rec := transcript.New(transcript.TypeStart)
		rec.Run = info
		if err := r.tr.Append(rec); err != nil {
			return nil, err
		}
	}

	if cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cfg.Deadline, errDeadline)
		defer cancel()
	}
	res, err := r.loop(ctx)
	if err != nil {
		return nil, err
	}
	if r.tr != nil {
		end := transcript.New(transcript.TypeEnd)
		end.Status = string(res.Status)
		end.Step, end.RequestHash, end.Retries = r.failStep, r.failHash, r.failRetries
		if res.Err != nil {
			end.Error = res.Err.Error()
		}
		if err := r.tr.Append(end); err != nil {
			return nil, err
		}
	}
	rev := ResultEvent(res)
	rev.Retries = r.failRetries
	r.ev.emit(rev)
	verified := "not verified"
	if res.Verified {
		verified = "verified"
	}
	r.progressf("%s after %s, %s, %s%s", res.Status, plural(res.Steps, "step"), plural(res.Edits, "edit"), verified, errSuffix(res.Err))
	return res, r.ev.err
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

func (r *runner) loop(ctx context.Context) (*Result, error) {
	for {
		if status, err := r.budget(ctx); status != "" {
			return r.result(status, err), nil
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
			return r.result(r.classify(ctx, err), err), nil
		}
		if reply.Latency <= 0 {
			reply.Latency = time.Since(start)
		}
		r.step = req.Step
		r.account(reply)

		s := &stepRec{step: req.Step, hash: hash, reply: reply}
		ev := newEvent(EventStep, s.step)
		ev.RequestHash, ev.Usage, ev.LatencyMS, ev.Retries = hash, reply.Usage, ptr(reply.Latency.Milliseconds()), reply.Retries
		if reply.Truncated {
			// Cut off at the token limit: not the model's format mistake,
			// and nothing in it is acted on.
			ev.Reply = ptr(reply.Text)
			r.ev.emit(ev)
			next := r.st
			next.Truncations++
			out := &outcome{kind: EventTruncated, state: next, text: fmt.Sprintf(
				"reply cut off: the provider stopped your reply at its token limit after %d bytes, before the decision was complete; nothing was done. Reply with a shorter decision (for replace_text, a smaller old/new pair; split a large edit into several) (%d of %d cut-off replies in a row allowed).",
				len(reply.Text), next.Truncations, MaxTruncations)}
			if err := r.commit(s, nil, out); err != nil {
				return nil, err
			}
			if r.st.Truncations >= MaxTruncations {
				return r.result(StatusTruncated, fmt.Errorf("%d replies in a row cut off at the provider's reply token limit", r.st.Truncations)), nil
			}
			continue
		}
		if len(reply.Denied) > 0 {
			// The model used its CLI's own tools, which that CLI denied
			// headless: not a decision, told to the model like a malformed
			// one; a run of them ends as denied.
			ev.Reply = ptr(reply.Text)
			r.ev.emit(ev)
			next := r.st
			next.FormatErrors++
			next.Truncations = 0
			out := &outcome{kind: EventRejected, refusal: RefusalTool, state: next, text: fmt.Sprintf(
				"denied: you tried to use your own tools (%s), which are not available here and were denied. Act only through the five actions, replying with one JSON object, for example {\"action\":\"read_file\",\"path\":\"main.go\"} (%d of %d such replies in a row allowed).",
				strings.Join(reply.Denied, "; "), next.FormatErrors, r.cfg.MaxFormatErrors)}
			if err := r.commit(s, nil, out); err != nil {
				return nil, err
			}
			if r.st.FormatErrors >= r.cfg.MaxFormatErrors {
				return r.result(StatusDenied, fmt.Errorf("%d replies in a row without a decision, the last one using denied tools: %s", r.st.FormatErrors, strings.Join(reply.Denied, "; "))), nil
			}
			continue
		}
		dec, derr := provider.DecodeDecision([]byte(reply.Text))
		if derr != nil {
			ev.Reply = ptr(reply.Text)
			r.ev.emit(ev)
			next := r.st
			next.FormatErrors++
			next.Truncations = 0
			out := &outcome{kind: EventRejected, refusal: RefusalFormat, text: fmt.Sprintf(
				"malformed decision: %v. Reply with exactly one JSON object and nothing else, for example {\"action\":\"read_file\",\"path\":\"main.go\"} (%d of %d malformed replies in a row allowed).",
				derr, next.FormatErrors, r.cfg.MaxFormatErrors), state: next}
			if err := r.commit(s, nil, out); err != nil {
				return nil, err
			}
			if r.st.FormatErrors >= r.cfg.MaxFormatErrors {
				return r.result(StatusFormatError, fmt.Errorf("%d malformed decisions in a row; the last: %w", r.st.FormatErrors, derr)), nil
			}
			continue
		}
		s.decision = dec
		ev.Action, ev.Decision = dec.Action, dec
		r.ev.emit(ev)

		if dec.Action == provider.ActionFinish && !r.st.Debt {
			next := r.st
			next.FormatErrors, next.Truncations = 0, 0
			if err := r.commit(s, dec, &outcome{kind: "finished", state: next}); err != nil {
				return nil, err
			}
			r.summary = dec.Summary
			return r.result(StatusFinished, nil), nil
		}
		if mutates(dec.Action) && r.tr != nil {
			// Durable before acting: if the process dies mid-action, a
			// resume knows an edit may have landed and reopens the debt.
			in := transcript.New(transcript.TypeIntent)
			in.Step, in.RequestHash, in.Reply, in.Usage, in.LatencyMS = s.step, hash, ptr(reply.Text), reply.Usage, reply.Latency.Milliseconds()
			in.Decision = mustJSON(dec)
			if err := r.tr.Append(in); err != nil {
				return nil, err
			}
		}
		out := r.act(ctx, dec)
		if err := r.commit(s, dec, out); err != nil {
			return nil, err
		}
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

// budget says whether the run must stop before asking the provider again.
func (r *runner) budget(ctx context.Context) (Status, error) {
	if ctx.Err() != nil {
		return ctxStatus(ctx, r.cfg.Deadline)
	}
	if r.step >= r.cfg.MaxSteps {
		return StatusStepLimit, fmt.Errorf("reached the step limit of %d", r.cfg.MaxSteps)
	}
	if r.cfg.MaxTokens > 0 && r.usageKnown && r.usage.TotalTokens >= r.cfg.MaxTokens {
		return StatusBudgetLimit, fmt.Errorf("used %d tokens, budget %d", r.usage.TotalTokens, r.cfg.MaxTokens)
	}
	return "", nil
}

func ctxStatus(ctx context.Context, deadline time.Duration) (Status, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, errDeadline) {
		return StatusTimeout, fmt.Errorf("%w (%v)", errDeadline, deadline)
	}
	return StatusCancelled, cause
}

// classify maps a provider failure to the run's status.
func (r *runner) classify(ctx context.Context, err error) Status {
	switch {
	case ctx.Err() != nil:
		s, _ := ctxStatus(ctx, r.cfg.Deadline)
		return s
	case errors.Is(err, provider.ErrTimeout):
		return StatusTimeout
	case errors.Is(err, provider.ErrDenied):
		return StatusDenied
	}
	return StatusProviderError
}

func (r *runner) account(reply *provider.Reply) {
	r.latency += reply.Latency
	if reply.Usage != nil {
		u := *reply.Usage
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
			reply.Usage = &u
		}
		r.usage.Add(&u)
		r.usageKnown = true
	}
}

func (r *runner) request() *provider.Request {
	req := provider.NewRequest()
	req.Task = r.cfg.Task
	req.Step = r.step + 1
	req.MaxSteps = r.cfg.MaxSteps
	req.Allow = slices.Clone(r.cfg.Allow)
	if req.Allow == nil {
		req.Allow = []string{}
	}
	req.Verify = slices.Clone(r.cfg.Verify)
	req.Debt = r.st.Debt
	req.History = slices.Clone(r.history)
	if req.History == nil {
		req.History = []provider.Turn{}
	}
	return req
}

func (r *runner) result(s Status, err error) *Result {
	res := &Result{
		Status: s, Steps: r.step, Edits: r.st.Edits, Debt: r.st.Debt,
		Verified: r.st.Verified && !r.st.Debt, Latency: r.latency, Summary: r.summary, Err: err,
	}
	if r.usageKnown {
		u := r.usage
		res.Usage = &u
	}
	return res
}

type stepRec struct {
	step     int
	hash     string
	reply    *provider.Reply
	decision *provider.Decision
}

// outcome is what an action produced, before truncation.
type outcome struct {
	kind     EventType // observation, rejected, verify, or "finished"
	refusal  Refusal
	text     string
	elided   int64 // bytes the runner already dropped from tool output
	exitCode *int
	passed   *bool
	edit     *workspace.Edit
	state    transcript.State
}

// commit records a completed step: the transcript record is appended and
// fsync'd first, then the in-memory state, history and events change.
func (r *runner) commit(s *stepRec, dec *provider.Decision, out *outcome) error {
	obs, cut := Truncate(out.text, r.cfg.ObservationBytes)
	elided := out.elided + cut
	if r.tr != nil {
		rec := transcript.New(transcript.TypeStep)
		rec.Step, rec.RequestHash, rec.Reply = s.step, s.hash, ptr(s.reply.Text)
		if dec != nil {
			rec.Decision = mustJSON(dec)
		}
		rec.Outcome, rec.Refusal = string(out.kind), string(out.refusal)
		rec.Observation, rec.Elided, rec.ExitCode = ptr(obs), elided, out.exitCode
		rec.Edited = out.edit != nil
		rec.State = ptr(out.state)
		rec.Usage, rec.LatencyMS = s.reply.Usage, s.reply.Latency.Milliseconds()
		rec.Retries, rec.Denied = s.reply.Retries, s.reply.Denied
		if err := r.tr.Append(rec); err != nil {
			return err
		}
	}
	r.st = out.state
	var canon []byte
	if dec != nil {
		canon = mustJSON(dec)
	}
	r.history = append(r.history, provider.NewTurn(s.step, s.reply.Text, canon, string(out.kind), string(out.refusal), out.exitCode, obs))
	if out.kind != "finished" {
		ev := newEvent(out.kind, s.step)
		ev.Observation, ev.Elided, ev.Refusal = ptr(obs), elided, out.refusal
		ev.ExitCode, ev.Passed, ev.Edit, ev.Debt = out.exitCode, out.passed, out.edit, ptr(r.st.Debt)
		r.ev.emit(ev)
	}
	r.progressLine(s, dec, out)
	return nil
}

func (r *runner) progressf(format string, args ...any) {
	if r.progress != nil {
		fmt.Fprintf(r.progress, "artagent: "+format+"\n", args...)
	}
}

func (r *runner) progressLine(s *stepRec, dec *provider.Decision, out *outcome) {
	if r.progress == nil {
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
		how = "verify failed"
		if out.passed != nil && *out.passed {
			how = "verify passed"
		}
	case "finished":
		how = "finished"
	case EventTruncated:
		how = "reply cut off at the token limit"
	default:
		how = "ok"
		if out.exitCode != nil && *out.exitCode != 0 {
			how = fmt.Sprintf("exit %d", *out.exitCode)
		}
		if out.edit != nil {
			how = fmt.Sprintf("edited line %d", out.edit.Line)
		}
	}
	debt := ""
	if r.st.Debt {
		debt = "; debt open"
	}
	r.progressf("step %d/%d %s: %s%s", s.step, r.cfg.MaxSteps, what, how, debt)
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
	return exitcode.Errorf(exitcode.ProgramNotFound, "verify: program %q not found in %v", name, p.SearchPath())
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
		return exitcode.Errorf(exitcode.Usage, "transcript %s: inside the workspace, where the model could edit it; keep it outside", path)
	}
	return nil
}
