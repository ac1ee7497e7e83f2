// Package goalobs records a goal store's mutations as lib/obs events
// (goal.created, goal.updated with what the step added, and
// goal.update_refused) through the store's OnUpdate hook. Drafts carry
// metadata, never payloads: a goal's revision, phase, checklist progress
// and sealed phases, and the task and event ids its evidence cites, not
// its texts.
package goalobs

import (
	"context"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/obs"
)

// Event types the goal adapter emits.
const (
	TypeGoalCreated       = "goal.created"
	TypeGoalUpdated       = "goal.updated"
	TypeGoalUpdateRefused = "goal.update_refused"
)

// GoalSubject is the subject of a goal's events.
func GoalSubject(id string) string { return "goal/" + id }

// GoalSnapshot is what an event records of a journal: where it stands, not
// what it says.
func GoalSnapshot(j *goal.Journal) map[string]any {
	if j == nil {
		return nil
	}
	sealed := []any{}
	for _, p := range goal.Phases {
		if j.Sealed(p) {
			sealed = append(sealed, string(p))
		}
	}
	done := 0
	for _, it := range j.Checklist {
		if len(it.Evidence) > 0 {
			done++
		}
	}
	return map[string]any{
		"revision":        j.Revision,
		"phase":           string(j.Phase),
		"sealed":          sealed,
		"checklist_items": len(j.Checklist),
		"checklist_done":  done,
		"closed":          j.Closed(),
	}
}

// GoalUpdated is the draft of one goal mutation: the snapshots before and
// after, or, when the store refused it, the snapshot it was refused against
// (nil when it was refused before loading, e.g. a stale revision) and the
// refusal (exit code and message).
func GoalUpdated(id string, before, after *goal.Journal, err error) obs.Draft {
	attrs := map[string]any{"goal": id}
	if before != nil {
		attrs["before"] = GoalSnapshot(before)
	}
	typ := TypeGoalUpdated
	if err != nil {
		typ = TypeGoalUpdateRefused
		attrs["error"] = map[string]any{"exit_code": exitcode.Of(err), "message": err.Error()}
	} else if after != nil {
		attrs["after"] = GoalSnapshot(after)
		if before != nil {
			attrs["added"] = addedEvidence(goal.AppendedEvidence(before, after))
		}
	}
	return obs.Draft{Subject: GoalSubject(id), Type: typ, Role: obs.RoleOrchestrator, Attrs: attrs}
}

// addedEvidence says what a step added: how many pieces of evidence of
// each type, and the artq task ids (with the state recorded) and artobs
// event ids it cites: the links from a goal to the pipeline's own records,
// so a reader of one sink can follow a goal to the tasks and events behind
// it. Texts, paths and commands stay out (metadata, not payloads).
func addedEvidence(evs []goal.Evidence) map[string]any {
	counts := map[string]any{}
	tasks, events := []any{}, []any{}
	for _, e := range evs {
		n, _ := counts[string(e.Type)].(int)
		counts[string(e.Type)] = n + 1
		switch e.Type {
		case goal.EvidenceTask:
			t := map[string]any{"id": e.Task, "state": string(e.State), "verified": e.FromQueue != nil}
			tasks = append(tasks, t)
		case goal.EvidenceEvent:
			events = append(events, map[string]any{"id": e.Event, "verified": e.FromSink != nil})
		}
	}
	return map[string]any{"evidence": counts, "tasks": tasks, "events": events}
}

// Hook is a goal.Store OnUpdate that records each mutation on em:
// goal.created, goal.updated (with what the step added: evidence counts by
// type and the task and event ids it cites) or goal.update_refused, with
// correlation. Set it as store.OnUpdate; the store's results and errors
// are untouched, and the "before" snapshot is the store's own, read under
// the goal's lock. Events are emitted on ctx detached from its
// cancellation (the record of a mutation that happened is not cancelled
// with the caller). A nil em records nothing.
func Hook(ctx context.Context, em *obs.Emitter, correlation string) func(goal.Change) {
	ctx = context.WithoutCancel(ctx)
	return func(c goal.Change) {
		d := GoalUpdated(c.ID, c.Before, c.After, c.Err)
		if c.Created {
			d = obs.Draft{Subject: GoalSubject(c.ID), Type: TypeGoalCreated, Role: obs.RoleOrchestrator,
				Attrs: map[string]any{"goal": c.ID, "after": GoalSnapshot(c.After)}}
		}
		d.Correlation = correlation
		em.Emit(ctx, d)
	}
}
