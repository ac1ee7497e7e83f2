package queue

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// MaxReason bounds a trace's reason: a log kept for years keeps one short
// line per attempt, never a command's output.
const MaxReason = 240

// reasons redacts every reason with the text rules of lib/obs: a refusal
// message quotes what the task asked for, which may hold a secret.
var reasons = redact.New(redact.Options{})

// Reason is the short, redacted, bounded line that says why an attempt did
// not succeed: the refusal or error message, "timed out: limit 30s, ran
// 30.1s", the
// signal that killed it, the exit status; "" for a success. It is data:
// the trace keeps it, so status and log can show it without the events.
func Reason(r *execx.Result) string {
	var s string
	switch r.Status {
	case execx.StatusSucceeded:
		return ""
	case execx.StatusRejected, execx.StatusError:
		s = r.Error
	case execx.StatusTimedOut:
		s = "timed out: ran " + roundMS(r.DurationMS)
		if r.TimeoutMS > 0 {
			s = "timed out: limit " + roundMS(r.TimeoutMS) + ", ran " + roundMS(r.DurationMS)
		}
		if r.Killed {
			s += ", killed (SIGKILL) after ignoring SIGTERM"
		}
	case execx.StatusCancelled:
		s = "cancelled"
	case execx.StatusFailed:
		if r.Signal != "" {
			s = "killed by " + r.Signal
		} else {
			s = fmt.Sprintf("exited with status %d", r.ExitCode)
		}
	default:
		s = string(r.Status)
	}
	if r.OutputIncomplete {
		s += "; output incomplete (a descendant held the pipe)"
	}
	if n := r.Network; n != nil && len(n.Refused) > 0 {
		// What the task was refused is most often why it failed.
		s += "; network refused: " + n.Refused[0].Reason
		if more := len(n.Refused) - 1 + n.RefusedOmitted; more > 0 {
			s += fmt.Sprintf(" (and %d more)", more)
		}
	}
	return boundReason(s)
}

// boundReason makes s one redacted line of at most MaxReason bytes.
func boundReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var sum redact.Summary
	s = reasons.Text(s, &sum)
	if len(s) <= MaxReason {
		return s
	}
	cut := MaxReason - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func roundMS(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(100 * time.Millisecond)
	}
	return d.String()
}
