package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	_ "github.com/art-runtime/art/lib/execx/netallow" // the tool and verify policies may name network allow
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/words"
	"github.com/art-runtime/art/lib/workspace"
)

// act performs one decoded decision (never finish without debt, which
// take handles) and says what the decider observes and how the state
// moves from st.
func (c *Core) act(ctx context.Context, d *provider.Decision, m *Move, st transcript.State) *outcome {
	next := st
	next.FormatErrors, next.Truncations = 0, 0
	switch d.Action {
	case provider.ActionRunTool:
		return c.runTool(ctx, d, m, next)
	case provider.ActionReadFile:
		data, err := c.ed.Read(d.Path)
		if err != nil {
			return refused(err, next)
		}
		return &outcome{kind: EventObservation, text: fmt.Sprintf("%s (%d bytes):\n%s", d.Path, len(data), data), state: next}
	case provider.ActionReplaceText:
		edit, err := c.ed.Replace(d.Path, d.Old, *d.New)
		if err != nil {
			return refused(err, next)
		}
		next.Edits++
		next.Debt = true
		next.Verified = false
		return &outcome{kind: EventObservation, edit: edit, state: next, text: fmt.Sprintf(
			"edited %s: replaced the text at line %d (%d → %d bytes). Verification debt is open: run verify before finish.",
			d.Path, edit.Line, edit.BytesBefore, edit.BytesAfter)}
	case provider.ActionVerify:
		return c.runVerify(ctx, next)
	case provider.ActionFinish:
		return &outcome{kind: EventRejected, refusal: RefusalDebt, state: next, text: fmt.Sprintf(
			"finish rejected: verification debt is open: an edit is not covered by a passing verify. Run verify (%s) and finish after it passes.",
			words.Quote(c.cfg.Verify))}
	}
	// DecodeDecision admits only the five actions.
	panic("agent: unknown action " + string(d.Action))
}

func (c *Core) runTool(ctx context.Context, d *provider.Decision, m *Move, next transcript.State) *outcome {
	argv := append([]string{d.Program}, d.Args...)
	timeout := c.cfg.ToolTimeout
	if m.Timeout < 0 || m.Timeout > timeout {
		return &outcome{kind: EventRejected, refusal: RefusalInvalid, state: next, text: fmt.Sprintf(
			"run_tool %s: timeout %v refused: it must be positive and at most the operator's tool timeout %v", words.Quote(argv), m.Timeout, timeout)}
	}
	if m.Timeout > 0 {
		timeout = m.Timeout
	}
	t := execx.NewTask(d.Program, d.Args...)
	t.Dir = m.Dir
	t.Limits.Timeout = jsonx.Duration(timeout)
	t.Limits.OutputBytes = c.outputCap()
	res, err := execx.Run(ctx, c.tools, t, execx.Options{Supervised: true, Pool: c.pool, Environ: c.cfg.Environ})
	if err != nil {
		return refused(fmt.Errorf("run_tool %s: %w", words.Quote(argv), err), next)
	}
	out := &outcome{kind: EventObservation, state: next, exitCode: ptr(res.ExitCode), timedOut: res.TimedOut, cancelled: cancelledWith(ctx, res)}
	note := ""
	if m.Dir != "" && m.Dir != "." {
		note = " (in " + m.Dir + ")"
	}
	out.text, out.elided = toolText(argv, note, res, timeout)
	return out
}

// signalWait bounds how long the loop waits, after a tool died of a
// signal that its runner did not send, for the run's own cancellation.
// Whoever cancels a task from outside (artq cancel: the supervisor signals
// every process of the task) signals the agent and its tool at once — the
// tool's own SIGTERM, or its supervisor's SIGKILL when that supervisor
// got the SIGTERM first — and the tool's end can reach the loop before
// the agent's signal handler has cancelled ctx: without the wait the run
// would take its next step and end failed, not cancelled (130).
const signalWait = 500 * time.Millisecond

// cancelledWith reports whether a tool's run was cut off by the run's
// cancellation: its runner cancelled it, or it died of a signal from
// outside and ctx ends within signalWait.
func cancelledWith(ctx context.Context, res *execx.Result) bool {
	if res.Cancelled || res.TimedOut || res.Signal == "" {
		return res.Cancelled
	}
	t := time.NewTimer(signalWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

func (c *Core) runVerify(ctx context.Context, next transcript.State) *outcome {
	t := execx.NewTask(c.verifyProg, c.cfg.Verify[1:]...)
	t.Limits.Timeout = jsonx.Duration(c.cfg.VerifyTimeout)
	t.Limits.OutputBytes = c.outputCap()
	res, err := execx.Run(ctx, c.verify, t, execx.Options{Supervised: true, Pool: c.pool, Environ: c.cfg.Environ})
	out := &outcome{kind: EventVerify, state: next}
	if err == nil {
		out.timedOut, out.cancelled = res.TimedOut, cancelledWith(ctx, res)
	} else {
		out.cancelled = ctx.Err() != nil
	}
	passed := err == nil && res.Status == execx.StatusSucceeded
	out.passed = ptr(passed)
	if passed {
		out.state.Debt = false
		out.state.Verified = true
	} else {
		out.state.Verified = false
		out.state.Debt = next.Debt || next.Edits > 0
	}
	verdict := "verification passed."
	if next.Debt {
		verdict = "verification passed: debt cleared."
	}
	if !passed {
		// A verify cut off (Ctrl-C, a client's cancel) did not fail: it
		// did not finish. Either way the debt stays open.
		how := "failed"
		switch {
		case out.cancelled:
			how = "cancelled"
		case out.timedOut:
			how = "timed out"
		}
		verdict = "verification " + how + ": debt remains open."
		if out.state.Edits == 0 {
			verdict = "verification " + how + "."
		}
	}
	if err != nil {
		out.exitCode = ptr(exitcode.Of(err))
		out.text = fmt.Sprintf("$ %s (verify)\nverify could not run: %v\n%s", words.Quote(c.cfg.Verify), err, verdict)
		return out
	}
	out.exitCode = ptr(res.ExitCode)
	out.text, out.elided = toolText(c.cfg.Verify, " (verify)", res, c.cfg.VerifyTimeout)
	out.text += " " + verdict
	return out
}

// outputCap is what the runner keeps of a tool's output: the observation
// bound less room for the command line and the exit line around it, so a
// tool's output is usually cut once (by the runner), not twice.
func (c *Core) outputCap() int64 {
	n := c.cfg.ObservationBytes
	return int64(n - min(n/4, 1024))
}

// toolText is the observation of a finished process: the command, its
// output, and how it ended. It holds no clock readings, so a replay that
// produces the same output produces the same observation.
func toolText(argv []string, note string, res *execx.Result, timeout time.Duration) (string, int64) {
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s%s\n", words.Quote(argv), note)
	b.WriteString(res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		b.WriteByte('\n')
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "[timed out after %s: process group killed; exit %d]", timeout, res.ExitCode)
	case res.Cancelled:
		fmt.Fprintf(&b, "[cancelled: process group killed; exit %d]", res.ExitCode)
	case res.Signal != "":
		fmt.Fprintf(&b, "[killed by %s; exit %d]", res.Signal, res.ExitCode)
	default:
		fmt.Fprintf(&b, "[exit %d]", res.ExitCode)
	}
	if res.OutputIncomplete {
		b.WriteString(" [output incomplete: a descendant kept the output open]")
	}
	return b.String(), res.OutputOmitted
}

// refused turns an editor or runner refusal into a rejected outcome.
func refused(err error, next transcript.State) *outcome {
	return &outcome{kind: EventRejected, refusal: refusalOf(err), text: err.Error(), state: next}
}

func refusalOf(err error) Refusal {
	switch {
	case errors.Is(err, fsx.ErrEscape):
		return RefusalPath
	case errors.Is(err, workspace.ErrEmptyOld), errors.Is(err, workspace.ErrNoMatch), errors.Is(err, workspace.ErrAmbiguous):
		return RefusalMatch
	case errors.Is(err, workspace.ErrChanged):
		return RefusalChanged
	case errors.Is(err, workspace.ErrNotExist), errors.Is(err, workspace.ErrNotRegular),
		errors.Is(err, workspace.ErrTooLarge), errors.Is(err, workspace.ErrSymlink):
		return RefusalFile
	case errors.Is(err, execx.ErrNotAllowed), errors.Is(err, execx.ErrProgramNotFound), errors.Is(err, execx.ErrNotExecutable):
		return RefusalProgram
	}
	switch exitcode.Of(err) {
	case exitcode.Refused, exitcode.ProgramNotFound:
		return RefusalProgram
	}
	return RefusalInvalid
}
