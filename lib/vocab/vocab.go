// Package vocab holds the few words art's documents share across tools: the
// task states of a queue, the rule for task, worker and queue names, and the
// size bounds of names and event headers.
//
// It exists so that a reader of those words does not link their writers: a
// goal journal checks a task id and a task state without linking the queue,
// its runner and its sandbox, and checks an event header's length without
// linking the redactor. It imports nothing of art's but lib/jsonx, and must
// stay a leaf (internal/layout holds that).
package vocab

import "github.com/art-runtime/art/lib/jsonx"

// TaskState names where a task is in its life.
type TaskState string

// Task states (docs/artq.md): queued → running → succeeded | failed |
// cancelled; failed → queued only by an explicit retry.
const (
	StateQueued    TaskState = "queued"
	StateRunning   TaskState = "running"
	StateSucceeded TaskState = "succeeded"
	StateFailed    TaskState = "failed"
	StateCancelled TaskState = "cancelled"
)

// States lists every state, for schemas and parity tests.
var States = []TaskState{StateQueued, StateRunning, StateSucceeded, StateFailed, StateCancelled}

// Terminal reports whether s ends the task (failed may still be retried
// explicitly, but nothing happens to it on its own).
func (s TaskState) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// MaxIDLen bounds task, worker and queue names.
const MaxIDLen = 128

// MaxEventHeader bounds an event envelope's subject, type, correlation and
// causation (docs/artobs.md), so a journal naming an event can check it
// without linking the sink.
const MaxEventHeader = 1024

// ValidName checks a task, worker or queue name: 1 to MaxIDLen bytes of
// letters, digits, '-' and '_', starting with a letter or digit, so it is
// also a file name and a NATS subject token. what labels the field in the
// error.
func ValidName(what, s string) error {
	if s == "" {
		return jsonx.Errorf(what, "must not be empty")
	}
	if len(s) > MaxIDLen {
		return jsonx.Errorf(what, "longer than %d bytes", MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return jsonx.Errorf(what, "%q: use letters, digits, '-' and '_' (starting with a letter or digit)", s)
		}
	}
	return nil
}

// The environment variables that carry W3C trace context between
// processes: the worker sets them for each run, artexec records them,
// artq and artagent continue them (lib/obs/tracectx parses them with the
// OpenTelemetry propagator; this leaf only names them and recognises a
// well-formed value, so the lean binaries link no HTTP stack).
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// ValidTraceparent reports whether s is a well-formed version-00 W3C
// traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower
// case, neither id all zeros.
func ValidTraceparent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	return lowerHex(s[3:35]) && lowerHex(s[36:52]) && lowerHex(s[53:55]) && !zeros(s[3:35]) && !zeros(s[36:52])
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func zeros(s string) bool {
	for i := range len(s) {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
