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
	}
	return obs.Draft{Subject: GoalSubject(id), Type: typ, Role: obs.RoleOrchestrator, Attrs: attrs}
}

// GoalStore wraps a *goal.Store: Create and Update behave exactly as the
// store's (same results, same errors) and each also emits goal.created,
// goal.updated or goal.update_refused with before/after snapshots. The
// "before" snapshot is taken inside the store's lock, from the very journal
// the mutation is applied to, so it is exact, not a racy re-read.
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

func (g GoalStore) emit(ctx context.Context, d obs.Draft) {
	d.Correlation = g.Correlation
	g.Emitter.Emit(context.WithoutCancel(ctx), d)
}
