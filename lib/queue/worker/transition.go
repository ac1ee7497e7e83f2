package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/obs/redact"
	"github.com/art-runtime/art/lib/queue"
)

// Transition is one change of a task's state as a worker made or saw it:
// claimed (running), finished (succeeded, failed, cancelled) or requeued by
// recovery. A worker's Log gets one for each, so a worker run from cron
// says what it did.
type Transition struct {
	Time time.Time
	// Worker is the id of the worker that made or saw the change
	// (Config.ID): several workers appending to one log file are told
	// apart by it.
	Worker   string
	Task     string
	Attempt  int
	State    queue.TaskState
	Duration time.Duration // the attempt's run time (finished only)
	Reason   string        // the trace's reason, or recovery's
}

// tailRedactor redacts kept output tails with the text rules of lib/obs,
// as the queue redacts reasons.
var tailRedactor = redact.New(redact.Options{})

// MaxTail bounds the output tail a worker keeps for a failed attempt.
const MaxTail = 4096

// TailName is the file, under Config.TailDir, that keeps the output
// tail of a failed attempt.
func TailName(id string, attempt int) string { return fmt.Sprintf("%s.%d.tail", id, attempt) }

// ReadTail returns the kept output tail of an attempt, "" if none was kept.
func ReadTail(dir, id string, attempt int) string {
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, TailName(id, attempt)))
	if err != nil || len(b) > MaxTail {
		return ""
	}
	return string(b)
}

// writeTail keeps the end of a failed attempt's output: at most MaxTail
// bytes, from a line start where the end holds one, redacted with the text
// rules (a failing command's last lines are where a leaked token shows).
func writeTail(dir, id string, attempt int, res *execx.Result) error {
	out := res.Output
	if out == "" {
		return nil
	}
	// The redactor may lengthen a line (a marker for a short secret): cut
	// after redacting too.
	var sum redact.Summary
	out = tailOf(tailRedactor.Text(tailOf(out, MaxTail*2), &sum), MaxTail)
	if err := os.MkdirAll(dir, fsx.DirMode); err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(dir, TailName(id, attempt)), []byte(out), fsx.FileMode)
}

// tailOf is the last n bytes of s, from just after a newline when that
// leaves something, else from a UTF-8 boundary.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
		return t[i+1:]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return t
}

func (w *worker) log(tr Transition) {
	if w.cfg.Log != nil {
		tr.Worker = w.self
		w.cfg.Log(tr)
	}
}

// stateOf is the state an event of a task leaves it in, for a Transition.
func stateOf(t queue.EventType) queue.TaskState {
	switch t {
	case queue.EventSucceeded:
		return queue.StateSucceeded
	case queue.EventFailed:
		return queue.StateFailed
	case queue.EventCancelled:
		return queue.StateCancelled
	case queue.EventStarted:
		return queue.StateRunning
	}
	return queue.StateQueued // requeued, retried
}
