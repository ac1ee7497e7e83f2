package queue

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/art-runtime/art/lib/exitcode"
)

// Claim starts the oldest queued task under this worker by appending
// started after catching up; losing the race for one task moves on to the
// next. It returns a copy of the claimed task, or nil when none is queued.
//
// mine holds the ids of the tasks the worker is still running: a worker
// never claims one of those again (a run it lost to recovery is still
// winding down), it leaves it to another worker or to later.
//
// Several workers would all reach for the same oldest task at once, and
// all but one lose the race, catch up and reach for the next one together
// again (with 4 workers, 1.5 refused appends per task, each a round trip).
// So when the state shows other workers running tasks, or after a lost
// race, a worker takes one of the oldest few (twice as many as the workers
// seen, at most claimSpread), chosen by a hash of its id: rival workers
// then mostly take different tasks. A worker alone keeps exact oldest-first
// order; with rivals, order holds within that small window.
func (q *Queue) Claim(ctx context.Context, worker string, mine map[string]bool) (*Task, error) {
	var got Task
	tries := 0
	evs, err := q.update(ctx, func(st *State) ([]Proposal, error) {
		cands := claimable(st, worker, mine, 1, tries)
		tries++
		if len(cands) == 0 {
			return nil, nil
		}
		t := cands[0]
		ev := &Event{Time: q.now().UTC(), Type: EventStarted, Task: t.ID, Attempt: t.Attempt, Worker: worker}
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		got = *t
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	got.State, got.Worker, got.LastSeq, got.Claim = StateRunning, worker, evs[0].Seq, evs[0].Seq
	return &got, nil
}

// claimable picks up to n queued tasks (none in mine) for worker to claim,
// oldest first. A worker alone takes the n oldest. With rivals running
// tasks, or after tries lost races, it takes them from a window of the
// oldest few (n times twice the workers seen, at most n*claimSpread),
// starting at a place chosen by a hash of its id: rival workers then
// mostly take different tasks (see Claim).
func claimable(st *State, worker string, mine map[string]bool, n, tries int) []*Task {
	window := n
	if rivals := rivalWorkers(st, worker); rivals > 0 || tries > 0 {
		window = n * min(2*(rivals+1)+tries, claimSpread)
	}
	cands := make([]*Task, 0, window)
	for _, c := range st.Queued(len(mine) + window) {
		if !mine[c.ID] && len(cands) < window {
			cands = append(cands, c)
		}
	}
	if len(cands) <= n {
		return cands
	}
	start := int((workerHash(worker) + uint32(tries+1)) % uint32(len(cands)))
	out := make([]*Task, 0, n)
	for i := range n {
		out = append(out, cands[(start+i)%len(cands)])
	}
	slices.SortFunc(out, func(a, b *Task) int { return cmp.Compare(a.EnqSeq, b.EnqSeq) })
	return out
}

// claimSpread bounds the window of oldest tasks rival workers claim from.
const claimSpread = 16

// rivalWorkers counts the other workers that run tasks now (up to
// claimSpread: more would not widen the window).
func rivalWorkers(st *State, self string) int {
	var seen []string
	st.Running(func(t *Task) {
		if t.Worker != self && len(seen) < claimSpread && !slices.Contains(seen, t.Worker) {
			seen = append(seen, t.Worker)
		}
	})
	return len(seen)
}

// workerHash is FNV-1a of a worker id: where in the window it claims.
func workerHash(id string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return h
}

// ClaimN claims up to n of the oldest queued tasks at once (never one in
// mine; spread among rival workers as Claim's are, by claimable): one catch-up, one decision, and on a backend that commits
// independent appends together (EachAppender) one commit, so the started
// events of a worker filling several free slots share one fsync. Each
// claim is still its own conditional append: a task another worker took
// meanwhile is skipped and the others stand. It returns the tasks claimed,
// oldest first; none when nothing is queued.
func (q *Queue) ClaimN(ctx context.Context, worker string, mine map[string]bool, n int) ([]*Task, error) {
	ea, ok := q.b.(EachAppender)
	if !ok || n <= 1 {
		var out []*Task
		for len(out) < max(n, 1) {
			t, err := q.Claim(ctx, worker, mine)
			if err != nil || t == nil {
				return out, err
			}
			out = append(out, t)
			if len(out) < n {
				mine = withID(mine, t.ID)
			}
		}
		return out, nil
	}
	for tries := 0; tries < maxStale; tries++ {
		var cands []Task
		var calls [][]Proposal
		q.mu.Lock()
		err := q.catchUpLocked(ctx)
		if err == nil {
			now := q.now().UTC()
			for _, c := range claimable(q.st, worker, mine, n, tries) {
				ev := &Event{Time: now, Type: EventStarted, Task: c.ID, Attempt: c.Attempt, Worker: worker}
				if err = q.st.Check(ev); err != nil {
					break
				}
				cands = append(cands, *c)
				calls = append(calls, []Proposal{{Event: ev, Expect: c.LastSeq}})
			}
		}
		q.mu.Unlock()
		if err != nil || len(calls) == 0 {
			return nil, err
		}
		evss, errs := ea.AppendEach(ctx, calls)
		var out []*Task
		stale := false
		for i := range calls {
			if errors.Is(errs[i], ErrStale) {
				stale = true
				continue
			}
			if errs[i] != nil {
				// A failed commit fails every call in it; the worker
				// stops, and recovery requeues whatever was claimed.
				return nil, errs[i]
			}
			if err := q.applyOwn(evss[i]); err != nil {
				return nil, err
			}
			t := cands[i]
			t.State, t.Worker, t.LastSeq, t.Claim = StateRunning, worker, evss[i][0].Seq, evss[i][0].Seq
			out = append(out, &t)
		}
		if len(out) > 0 || !stale {
			return out, nil
		}
	}
	return nil, exitcode.Errorf(exitcode.Internal, "claim: still conflicting after %d tries", maxStale)
}

func withID(m map[string]bool, id string) map[string]bool {
	c := make(map[string]bool, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	c[id] = true
	return c
}

// Finish appends the attempt's trace and then its terminal event, each
// synced before the next: a crash between the two leaves a trace that
// recovery turns into the same terminal event, never a second run. Both
// carry the run's claim, and both are appended only while the lease is
// held and the claim is still the task's current one: a worker that lost
// its lease, or whose task was recovered and claimed again, records
// nothing for the old run (it returns ""). The append's condition (the
// task's latest event) makes that check and the write one step, which is
// also why neither append reads the log first (updateTask).
func (q *Queue) Finish(ctx context.Context, lease Lease, worker string, run *Task, tr *Trace) (EventType, error) {
	id, attempt, claim := run.ID, run.Attempt, run.Claim
	ours := func(t *Task) bool {
		return lease.Held() && t != nil && t.State == StateRunning && t.Worker == worker && t.Attempt == attempt && t.Claim == claim
	}
	_, err := q.updateTask(ctx, func(st *State) ([]Proposal, error) {
		t := st.Task(id)
		if !ours(t) || t.Trace != nil {
			return nil, nil
		}
		ev := &Event{Time: q.now().UTC(), Type: EventTrace, Task: id, Attempt: attempt, Claim: claim, Trace: tr}
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	if err != nil {
		return "", err
	}
	Failpoint("after-trace")
	var term EventType
	_, err = q.updateTask(ctx, func(st *State) ([]Proposal, error) {
		t := st.Task(id)
		term = ""
		if !ours(t) || t.Trace == nil {
			return nil, nil
		}
		ev := &Event{Time: q.now().UTC(), Type: t.Trace.Outcome(), Task: id, Attempt: attempt, Claim: claim}
		if err := st.Check(ev); err != nil {
			return nil, err
		}
		term = ev.Type
		return []Proposal{{Event: ev, Expect: t.LastSeq}}, nil
	})
	return term, err
}
