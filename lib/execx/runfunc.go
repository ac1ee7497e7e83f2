package execx

import "context"

// RunFunc is Run's signature: what a caller that runs tasks takes so that
// a wrapper (execobs.TaskRunner's events, a test's counting runner) drops
// in where Run is called.
type RunFunc func(ctx context.Context, p *Policy, t *Task, opt Options) (*Result, error)
