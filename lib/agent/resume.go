package agent

import (
	"fmt"
	"slices"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
)

// InterruptedNote is the observation of a step whose action was under way
// when the process died: the model is told, not left to assume either way.
const InterruptedNote = "[interrupted: artagent stopped while this action was running, and its effect on the workspace is unknown. Read files again before editing them.]"

// restore rebuilds the loop's state from a transcript: step count, history
// (exactly the observations the model saw, so the next request hashes as
// it would have), usage, latency, and verification state. A decision whose
// intent was recorded but whose step was not is closed as interrupted; if it
// was an edit, debt is reopened, because the edit may have landed: the
// files on disk are real, the transcript only says what is known.
func (r *runner) restore(res *Resume, info *transcript.Run) error {
	recs := res.Records
	if len(recs) == 0 || recs[0].Type != transcript.TypeStart || recs[0].Run == nil {
		return fmt.Errorf("resume: %w: the first record is not the run's start", transcript.ErrCorrupt)
	}
	was := recs[0].Run
	switch {
	case was.Task != info.Task:
		return fmt.Errorf("%w: the task differs", ErrResumeMismatch)
	case was.Workspace != info.Workspace:
		return fmt.Errorf("%w: the workspace was %s", ErrResumeMismatch, was.Workspace)
	case !slices.Equal(was.Verify, info.Verify):
		return fmt.Errorf("%w: the verify command was %q", ErrResumeMismatch, was.Verify)
	}
	var pending *transcript.Record
	for i := 1; i < len(recs); i++ {
		rec := &recs[i]
		switch rec.Type {
		case transcript.TypeStep:
			if rec.Step != r.c.step+1 || rec.State == nil || rec.Reply == nil || rec.Observation == nil {
				return fmt.Errorf("resume: %w: record %d: step %d after step %d, or fields missing", transcript.ErrCorrupt, i+1, rec.Step, r.c.step)
			}
			r.c.step, r.c.st = rec.Step, *rec.State
			r.history = append(r.history, provider.NewTurn(rec.Step, *rec.Reply, rec.Decision, rec.Outcome, rec.Refusal, rec.ExitCode, *rec.Observation))
			r.addRecorded(rec)
			pending = nil
			if rec.Outcome == "finished" {
				return ErrResumeFinished
			}
		case transcript.TypeIntent:
			pending = rec
		case transcript.TypeEnd:
			if rec.Status == string(StatusFinished) {
				return ErrResumeFinished
			}
		case transcript.TypeResume:
		default:
			return fmt.Errorf("resume: %w: record %d has type %q", transcript.ErrCorrupt, i+1, rec.Type)
		}
	}
	if r.c.tr != nil {
		rec := transcript.New(transcript.TypeResume)
		rec.Step, rec.DroppedBytes = r.c.step, res.Dropped
		if err := r.c.tr.Append(rec); err != nil {
			return err
		}
	}
	if pending == nil || pending.Step != r.c.step+1 {
		return nil
	}
	dec, err := provider.DecodeDecision(pending.Decision)
	if err != nil || pending.Reply == nil {
		return fmt.Errorf("resume: %w: the interrupted step's decision: %v", transcript.ErrCorrupt, err)
	}
	next := r.c.st
	next.FormatErrors = 0
	switch dec.Action {
	case provider.ActionReplaceText:
		next.Debt, next.Verified = true, false
	case provider.ActionVerify:
		next.Verified = false
		next.Debt = next.Debt || next.Edits > 0
	}
	obs := InterruptedNote
	if r.c.tr != nil {
		rec := transcript.New(transcript.TypeStep)
		rec.Step, rec.RequestHash, rec.Reply, rec.Decision = pending.Step, pending.RequestHash, pending.Reply, pending.Decision
		rec.Outcome, rec.Observation, rec.State, rec.Interrupted = string(EventObservation), &obs, &next, true
		rec.Usage, rec.LatencyMS = pending.Usage, pending.LatencyMS
		if err := r.c.tr.Append(rec); err != nil {
			return err
		}
	}
	r.c.step, r.c.st = pending.Step, next
	r.history = append(r.history, provider.NewTurn(pending.Step, *pending.Reply, pending.Decision, string(EventObservation), "", nil, obs))
	r.addRecorded(pending)
	return nil
}

func (r *runner) addRecorded(rec *transcript.Record) {
	if rec.Usage != nil {
		r.c.usage.Add(rec.Usage)
		r.c.usageKnown = true
	}
	r.c.latency += msDuration(rec.LatencyMS)
}
