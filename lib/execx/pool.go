package execx

import "sync/atomic"

// Pool keeps long-lived supervisors for the tasks of one runner process,
// so a task under isolation none (or landlock without the root-only mount
// view) does not pay for starting a supervisor process of its own: on
// Linux that start — a Go program's runtime start and exec — costs more
// CPU than the rest of the run. Pass it in Options.Pool; close it when the
// process stops running tasks.
//
// A pooled supervisor runs one task at a time and is the same
// supervisor as a per-task one: a child subreaper whose only children are
// the current task's processes, so every orphan it inherits belongs to
// that task, and wait4 saying ECHILD means nothing of the task is left.
// It takes another task only after that, and only when everything ended
// cleanly: it reported the program's exit, finished within the bound the
// runner waits, was never stopped, and found its own inherited state (its
// resource limits, its nice value and CPU affinity) as it was when it
// started. On any doubt — it was killed, stopped, timed out, broke the
// protocol — it is killed with its process group and never used again,
// and the next task gets a fresh one.
//
// Only a supervisor whose own process state does not depend on the task
// is pooled: no namespaces (strict's, or the mount namespace of the
// read-only view landlock adds for root), no mount view, no ID maps. Every
// other task keeps a supervisor of its own, made for it and gone with it.
// What the task inherits from the supervisor beyond its spec is the
// supervisor's credentials, limits and scheduling, which are the runner's
// (isolation none applies no limits in the supervisor; under landlock the
// exec stage applies the policy's limits to the task's own process). A
// task under isolation none runs as the same user as its runner and could
// already prlimit or signal the runner itself; a pooled supervisor adds
// nothing it could not reach before.
//
// Killing the runner kills its pooled supervisors and their tasks: each
// sees EOF on its socket to the runner and gets its parent-death signal
// (supervisors are started from one goroutine locked to its thread for
// the pool's life, since the signal follows the thread that forked them),
// and each kills its task before it exits. On other systems than Linux a
// Pool changes nothing.
//
// A Pool is safe for concurrent use by many runs.
type Pool struct {
	poolState
	reused, started, kept, discarded atomic.Int64
}

// PoolStats counts what a pool did with its supervisors: runs that reused
// an idle one or started one, and supervisors kept for the next run or
// discarded after a run (one a task left dirty, or past the idle bound).
// A worker's metrics report them (lib/queue/queuemetrics).
type PoolStats struct {
	Reused, Started, Kept, Discarded int64
}

// Stats returns the pool's counts so far (zero on systems without pools).
func (p *Pool) Stats() PoolStats {
	if p == nil {
		return PoolStats{}
	}
	return PoolStats{Reused: p.reused.Load(), Started: p.started.Load(), Kept: p.kept.Load(), Discarded: p.discarded.Load()}
}

// NewPool returns an empty pool that keeps at most idle supervisors
// waiting between runs (less than 1 means 1): a worker running N tasks at
// once needs N. It bounds what waits, not what runs: a run that finds no
// idle supervisor starts one.
func NewPool(idle int) *Pool {
	if idle < 1 {
		idle = 1
	}
	p := &Pool{}
	p.size = idle
	return p
}
