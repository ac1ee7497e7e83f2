// Package obs owns art's events: Drafts (what a tool observed, raw), their
// redaction into immutable, content-addressed Envelopes, the Emitter that
// sequences them per subject, and the sinks that keep them (memory, a
// writer such as stdout, and owner-only JSON Lines files).
//
// Raw attributes exist only in a Draft. Redaction (package redact) runs
// before any sink sees anything; only Envelopes leave. An Envelope's id is
// "sha256:" of the RFC 8785 canonical JSON of the redacted envelope without
// its id, so a retry or a replay of the same envelope is recognised by every
// sink and delivered once.
//
// Observing never fails the work observed: Emit returns a Delivery that
// says what each sink did, and reports failures through Options.Warn; it
// never returns an error to stop the caller, and never panics on any value.
//
// What it refuses: Drafts with duplicate keys, non-finite numbers, integer
// literals beyond 2^53, unknown fields or a bad header (exit 2); sink paths
// that are symlinks, not regular files, not owned by the caller or readable
// by others (exit 126); appending to a sink whose tail is corrupt or of
// another version (exit 125), or after a partial write that could not be
// cut off again or a failed fsync (the sink is poisoned: exit 125); an
// envelope older than what a sink already holds for its subject (exit 3).
package obs

import (
	"errors"
	"fmt"

	"github.com/art-runtime/art/lib/exitcode"
)

// Document kinds.
const (
	KindDraft = "Draft"
	KindEvent = "Event"
)

// Role names who produced an event in a handoff chain. Roles are observed,
// never enforced: obs is an adapter layer, not a state machine.
type Role string

// The roles of docs/artobs.md.
const (
	RoleBrain        Role = "brain"
	RoleOrchestrator Role = "orchestrator"
	RoleDispatcher   Role = "dispatcher"
	RoleWorker       Role = "worker"
	RoleRuntime      Role = "runtime"
)

// Roles lists every role, for flags, schemas and parity tests.
var Roles = []Role{RoleBrain, RoleOrchestrator, RoleDispatcher, RoleWorker, RoleRuntime}

// Valid reports whether r is one of Roles (the empty role is valid too:
// role is optional).
func (r Role) Valid() bool {
	if r == "" {
		return true
	}
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}

// Errors callers test with errors.Is. Each carries its exit code.
var (
	ErrSymlink     = exitcode.Sentinel(exitcode.Refused, "is a symlink (refusing to follow it)")
	ErrNotRegular  = exitcode.Sentinel(exitcode.Refused, "is not a regular file")
	ErrOwner       = exitcode.Sentinel(exitcode.Refused, "is owned by another user")
	ErrPermissions = exitcode.Sentinel(exitcode.Refused, "is accessible by group or others (want mode 0600)")
	ErrPoisoned    = exitcode.Sentinel(exitcode.Internal, "sink is poisoned by an earlier partial write or failed sync")
	ErrCorrupt     = exitcode.Sentinel(exitcode.Internal, "corrupt record")
	ErrVersion     = exitcode.Sentinel(exitcode.Internal, "record of an unsupported version")
	ErrStale       = exitcode.Sentinel(exitcode.Conflict, "the sink already holds this or a later event of the subject")
	ErrClosed      = exitcode.Sentinel(exitcode.Internal, "sink is closed")
	ErrBusy        = exitcode.Sentinel(exitcode.Internal, "sink is busy")
	ErrIDMismatch  = exitcode.Sentinel(exitcode.Usage, "id does not match the envelope's content")
	ErrNotRedacted = exitcode.Sentinel(exitcode.Usage, "envelope holds values redaction would remove")
	ErrSinkSpec    = exitcode.Sentinel(exitcode.Usage, "invalid sink (want jsonl:PATH, stdout or otlphttp://HOST:PORT)")
)

// SinkError is a failure of one sink: what it was doing, which sink, why.
type SinkError struct {
	Sink string
	Op   string
	Err  error
}

func (e *SinkError) Error() string { return fmt.Sprintf("events %s: %s: %v", e.Sink, e.Op, e.Err) }

// Unwrap keeps errors.Is working through the sink name.
func (e *SinkError) Unwrap() error { return e.Err }

// Hint says how to fix the refusals a user can fix.
func (e *SinkError) Hint() string {
	switch {
	case errors.Is(e.Err, ErrPermissions):
		return "run 'chmod 600 " + sinkPath(e.Sink) + "' if the events there may be read by you alone"
	case errors.Is(e.Err, ErrCorrupt), errors.Is(e.Err, ErrVersion):
		return "run 'artobs verify " + sinkPath(e.Sink) + "' to see every finding; write new events to another file"
	case errors.Is(e.Err, ErrPoisoned):
		return "a record was only partly written (disk full?); reopen the sink to recover its tail"
	}
	return ""
}

func sinkPath(name string) string {
	if len(name) > 6 && name[:6] == "jsonl:" {
		return name[6:]
	}
	return name
}
