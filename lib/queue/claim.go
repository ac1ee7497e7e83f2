package queue

import "context"

// Claim starts the oldest queued task under this worker by appending
// started after catching up; losing the race for one task moves on to the
// next. It returns a copy of the claimed task, or nil when none is queued.
//
// mine holds the ids of the tasks the worker is still running: a worker
// never claims one of those again (a run it lost to recovery is still
// winding down), it leaves it to another worker or to later.
func (q *Queue) Claim(ctx context.Context, worker string, mine map[string]bool) (*Task, error) {
	var got Task
	evs, err := q.update(ctx, func(st *State) ([]Proposal, error) {
		var t *Task
		for _, c := range st.Queued(len(mine) + 1) {
			if !mine[c.ID] {
				t = c
				break
			}
		}
		if t == nil {
			return nil, nil
		}
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

// Finish appends the attempt's trace and then its terminal event, each
// synced before the next: a crash between the two leaves a trace that
// recovery turns into the same terminal event, never a second run. Both
// carry the run's claim, and both are appended only while the lease is
// held and the claim is still the task's current one: a worker that lost
// its lease, or whose task was recovered and claimed again, records
// nothing for the old run (it returns ""). The append's condition (the
// task's latest event) makes that check and the write one step.
func (q *Queue) Finish(ctx context.Context, lease Lease, worker string, run *Task, tr *Trace) (EventType, error) {
	id, attempt, claim := run.ID, run.Attempt, run.Claim
	ours := func(t *Task) bool {
		return lease.Held() && t != nil && t.State == StateRunning && t.Worker == worker && t.Attempt == attempt && t.Claim == claim
	}
	_, err := q.update(ctx, func(st *State) ([]Proposal, error) {
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
	_, err = q.update(ctx, func(st *State) ([]Proposal, error) {
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
