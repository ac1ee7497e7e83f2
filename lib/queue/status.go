package queue

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// TaskStatus is one task as `artq status` prints it (docs/artq.md).
type TaskStatus struct {
	jsonx.TypeMeta
	ID          string    `json:"id"`
	State       TaskState `json:"state"`
	Attempts    int       `json:"attempts"`
	MaxAttempts int       `json:"max_attempts"`
	Program     string    `json:"program"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Worker runs the task (running only).
	Worker          string `json:"worker,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	// Last is how the latest traced attempt ended; absent before any.
	Last *LastRun `json:"last,omitempty"`
	// OutputTail is the end of the latest failed attempt's output
	// (redacted, bounded), when a worker on this machine kept it; status
	// of one task shows it.
	OutputTail string `json:"output_tail,omitempty"`
	// History is every claim of the task the log holds, in order (status
	// ID only): a re-run after a worker died shows as a second run of the
	// same attempt. HistoryFrom is the first sequence read when earlier
	// events were compacted into the snapshot (their claims are not in
	// History).
	History     []AttemptRun `json:"history,omitempty"`
	HistoryFrom uint64       `json:"history_from,omitempty"`
}

// LastRun is the trace metadata status shows.
type LastRun struct {
	Attempt    int          `json:"attempt"`
	Status     execx.Status `json:"status"`
	ExitCode   int          `json:"exit_code"`
	Signal     string       `json:"signal,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	// Reason is the trace's reason: why the attempt did not succeed.
	Reason string `json:"reason,omitempty"`
	// Acceptance is how the attempt's acceptance command ended, when the
	// worker ran one (the command succeeded first); it decided the state.
	Acceptance *AcceptanceRun `json:"acceptance,omitempty"`
}

// AcceptanceRun is the trace metadata of an acceptance command.
type AcceptanceRun struct {
	Status     execx.Status `json:"status"`
	ExitCode   int          `json:"exit_code"`
	Signal     string       `json:"signal,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	Reason     string       `json:"reason,omitempty"`
}

// StatusOf is the status document of t.
func StatusOf(t *Task) TaskStatus { return StatusWith(t, programOf(t.Manifest)) }

// StatusWith is StatusOf with the program already known: a state index
// keeps the program, not the manifest it came from.
func StatusWith(t *Task, program string) TaskStatus {
	ts := TaskStatus{
		TypeMeta: jsonx.Meta(KindTaskStatus),
		ID:       t.ID, State: t.State, Attempts: t.Attempts, MaxAttempts: t.MaxAttempts,
		Program:   program,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Worker: t.Worker, CancelRequested: t.CancelRequested,
	}
	if t.Last != nil {
		ts.Last = &LastRun{
			Attempt: t.LastAttempt, Status: t.Last.Status, ExitCode: t.Last.ExitCode,
			Signal: t.Last.Signal, DurationMS: t.Last.DurationMS, Reason: t.Last.Reason,
		}
		if a := t.Last.Acceptance; a != nil {
			ts.Last.Acceptance = &AcceptanceRun{Status: a.Status, ExitCode: a.ExitCode, Signal: a.Signal, DurationMS: a.DurationMS, Reason: a.Reason}
		}
	}
	return ts
}

func statusOfEnqueued(ev *Event) TaskStatus {
	return TaskStatus{
		TypeMeta: jsonx.Meta(KindTaskStatus),
		ID:       ev.Task, State: StateQueued, MaxAttempts: ev.MaxAttempts,
		Program:   programOf(ev.Manifest),
		CreatedAt: ev.Time, UpdatedAt: ev.Time,
	}
}

// ProgramOf is the program status shows for a stored manifest.
func ProgramOf(manifest []byte) string { return programOf(manifest) }

// programOf reads only the program out of a stored manifest: status of a
// large queue must not decode every manifest.
func programOf(manifest []byte) string {
	return gjson.GetBytes(manifest, "program").Str
}

// Summary counts tasks per state (`artq status --summary`).
type Summary struct {
	jsonx.TypeMeta
	Seq       uint64 `json:"seq"`
	Total     int    `json:"total"`
	Queued    int    `json:"queued"`
	Running   int    `json:"running"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Cancelled int    `json:"cancelled"`
}

// SummaryOf counts s.
func SummaryOf(s *State) Summary {
	return Summary{
		TypeMeta: jsonx.Meta(KindSummary),
		Seq:      s.Seq, Total: s.Len(),
		Queued: s.counts[0], Running: s.counts[1], Succeeded: s.counts[2],
		Failed: s.counts[3], Cancelled: s.counts[4],
	}
}

// WriteTable writes statuses as an aligned text table for a terminal.
func WriteTable(w io.Writer, list []TaskStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tATTEMPTS\tPROGRAM\tUPDATED\tLAST")
	for i := range list {
		ts := &list[i]
		state := string(ts.State)
		if ts.CancelRequested {
			state += " (cancelling)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", ts.ID, state, ts.Attempts, ts.MaxAttempts,
			ts.Program, ago(now, ts.UpdatedAt), ts.Last.Text())
	}
	return tw.Flush()
}

// WriteSummaryText writes a summary as one line for a terminal.
func WriteSummaryText(w io.Writer, s Summary) error {
	_, err := fmt.Fprintf(w, "%d tasks: %d queued, %d running, %d succeeded, %d failed, %d cancelled\n",
		s.Total, s.Queued, s.Running, s.Succeeded, s.Failed, s.Cancelled)
	return err
}

// Text is the run as a terminal shows it: "failed exit 1 in 2s; acceptance …",
// or "-" for no run.
func (l *LastRun) Text() string {
	if l == nil {
		return "-"
	}
	var b strings.Builder
	runText(&b, l.Status, l.Signal, l.ExitCode, l.DurationMS)
	if l.Reason != "" {
		b.WriteString(": " + l.Reason)
	}
	if a := l.Acceptance; a != nil {
		b.WriteString("; acceptance ")
		runText(&b, a.Status, a.Signal, a.ExitCode, a.DurationMS)
		if a.Reason != "" {
			b.WriteString(": " + a.Reason)
		}
	}
	return b.String()
}

func runText(b *strings.Builder, status execx.Status, signal string, code int, ms int64) {
	b.WriteString(string(status))
	if signal != "" {
		b.WriteString(" " + signal)
	} else if status != execx.StatusSucceeded {
		b.WriteString(" exit " + strconv.Itoa(code))
	}
	b.WriteString(" in " + (time.Duration(ms) * time.Millisecond).String())
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.Format(time.RFC3339)
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return t.Format("2006-01-02")
}
