package adapt

import (
	"context"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/obs"
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

// GoalStore wraps a *goal.Store: Create, Update and the mutations built on
// Update (Check, Seal, Close, Put) behave exactly as the store's (same
// results, same errors, the store's Sources verifying evidence) and each
// also emits goal.created, goal.updated (with what the step added: evidence
// counts by type and the task and event ids it cites) or
// goal.update_refused. The "before" snapshot is taken inside the store's
// lock, from the very journal the mutation is applied to, so it is exact,
// not a racy re-read. A nil Emitter records nothing.
type GoalStore struct {
	Store       *goal.Store
	Emitter     *obs.Emitter
	Correlation string
}

// Create stores a genesis journal and records it.
func (g GoalStore) Create(ctx context.Context, j *goal.Journal) (*goal.Journal, error) {
	out, err := g.Store.Create(j)
	if err == nil {
		g.emit(ctx, obs.Draft{Subject: GoalSubject(out.ID), Type: TypeGoalCreated, Role: obs.RoleOrchestrator,
			Attrs: map[string]any{"goal": out.ID, "after": GoalSnapshot(out)}})
	}
	return out, err
}

// Update applies mutate through the store and records the transition.
func (g GoalStore) Update(ctx context.Context, id string, rev int64, mutate func(next *goal.Journal) error) (*goal.Journal, error) {
	var before *goal.Journal
	out, err := g.Store.Update(id, rev, func(next *goal.Journal) error {
		before = next.Clone() // the stored journal, before mutate touches it
		return mutate(next)
	})
	g.emit(ctx, GoalUpdated(id, before, out, err))
	return out, err
}

// Check appends evidence to a checklist item (goal.Store.Check), recorded.
func (g GoalStore) Check(ctx context.Context, id string, rev int64, item string, e goal.Evidence) (*goal.Journal, error) {
	return g.Update(ctx, id, rev, func(j *goal.Journal) error { return j.AddEvidence(item, e) })
}

// Seal seals the current phase (goal.Store.Seal), recorded.
func (g GoalStore) Seal(ctx context.Context, id string, rev int64, summary string, evidence []goal.Evidence) (*goal.Journal, error) {
	return g.Update(ctx, id, rev, func(j *goal.Journal) error { return j.Seal(summary, evidence) })
}

// Close records a closure (goal.Store.Close), recorded.
func (g GoalStore) Close(ctx context.Context, id string, rev int64, doc *goal.ClosureDocument) (*goal.Journal, error) {
	return g.Update(ctx, id, rev, func(j *goal.Journal) error { return j.Close(doc) })
}

// Put stores a caller-supplied successor (goal.Store.Put), recorded.
func (g GoalStore) Put(ctx context.Context, id string, rev int64, doc *goal.Journal) (*goal.Journal, error) {
	return g.Update(ctx, id, rev, func(j *goal.Journal) error { return j.Replace(doc) })
}

func (g GoalStore) emit(ctx context.Context, d obs.Draft) {
	d.Correlation = g.Correlation
	g.Emitter.Emit(context.WithoutCancel(ctx), d)
}
