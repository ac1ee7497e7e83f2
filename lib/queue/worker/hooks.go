package worker

import (
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

// Hooks are told about the worker's runs. They are how a worker is
// observed without the worker knowing by whom: lib/queue/queueobs turns
// them into obs events, a test can count them. Every method is called from
// the goroutine running the attempt, so one implementation serves several
// attempts at once and must be safe for that. A hook never changes the
// outcome of the work.
type Hooks interface {
	// Runner returns the runner for one run of an attempt (the command,
	// or its acceptance): next, wrapped with whatever the hooks record.
	// It must return next's result and error untouched. The hooks may set
	// EnvCausation, EnvTraceparent and EnvTracestate in r.Task's
	// environment before calling next.
	Runner(r *Run, next execx.RunFunc) execx.RunFunc
	// AttemptDone is called when the worker is done with an attempt of
	// task, whatever its outcome: per-task state can be dropped.
	AttemptDone(task string)
}

// Run is one run of an attempt, as Hooks see it.
type Run struct {
	Task    *execx.Task
	Policy  *execx.Policy
	Attempt int
	// Step is "command" or "acceptance".
	Step string
	// Workspace is where the run runs.
	Workspace Workspace
}

// Workspace describes an attempt's workspace, for events.
type Workspace struct {
	Mode queue.WorkspaceMode
	// Dir is the attempt's directory: absolute, under the worker's
	// WorkDir, for copy; under the policy workspace for worktree; ""
	// when shared.
	Dir string
	// Files, Bytes and Skipped count what copy mode copied.
	Files, Bytes, Skipped int64
	// Prepare is how long making the workspace took (0 when shared).
	Prepare time.Duration
}

// Join returns Hooks that tell each of hs, in order: the first one's
// runner wraps the second's, and so on (events and spans of one worker).
// Nil entries are skipped.
func Join(hs ...Hooks) Hooks {
	var j joined
	for _, h := range hs {
		if h != nil {
			j = append(j, h)
		}
	}
	return j
}

type joined []Hooks

func (j joined) Runner(r *Run, next execx.RunFunc) execx.RunFunc {
	for i := len(j) - 1; i >= 0; i-- {
		next = j[i].Runner(r, next)
	}
	return next
}

func (j joined) AttemptDone(task string) {
	for _, h := range j {
		h.AttemptDone(task)
	}
}

// noHooks is the Hooks of a worker without any.
type noHooks struct{}

func (noHooks) Runner(_ *Run, next execx.RunFunc) execx.RunFunc { return next }
func (noHooks) AttemptDone(string)                              {}
