package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/queue"
)

// LogCmd prints the event log.
type LogCmd struct {
	Follow bool   `name:"follow" short:"f" help:"Keep printing events as they are appended, until interrupted."`
	After  uint64 `name:"after" placeholder:"SEQ" help:"Start after event SEQ (to resume a pipeline where it stopped)."`
}

// Help shows an example.
func (c *LogCmd) Help() string {
	return `Prints each event as a QueueEvent document, one JSON line each, in log
order; with -o text (auto on a terminal), one line an event: sequence,
time, type, task#attempt and what it carries (a failed trace's reason).
Traces carry metadata only (status, exit code, signal, duration, output byte
counts, truncation, a short redacted reason), never arguments or output.
Events folded into a snapshot by 'artq compact' are no longer in the log:
read from the start, a note on stderr says which. A reader never skips
events silently: if the events after --after SEQ, or after what --follow
has printed, were compacted before it read them (it fell behind
compaction), it stops with exit 3 naming them. Only reads: it writes
nothing, not even a lock file. --follow exits 130 when interrupted.

Example:
  artq log | jq -c 'select(.type == "failed")'
  artq log --follow --after "$last_seq" | artobs emit --sink jsonl:events.jsonl`
}

// Run prints events.
func (c *LogCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	b, err := f.open(g, true)
	if err != nil {
		return err
	}
	defer b.Close()
	w := bufio.NewWriterSize(std.Out, 1<<16)
	defer w.Flush()
	asJSON := g.JSON(std)
	var line []byte
	return queue.Follow(ctx, b, queue.FollowOptions{
		After:  c.After,
		Follow: c.Follow,
		Skipped: func(from, to uint64) {
			fmt.Fprintf(std.Err, "artq: events %d to %d were compacted into the snapshot\n", from, to)
		},
		Idle: w.Flush,
	}, func(ev *queue.Event) error {
		if !asJSON {
			_, err := w.WriteString(eventText(ev))
			return err
		}
		line = queue.AppendEventDoc(line[:0], ev)
		line = append(line, '\n')
		_, err := w.Write(line)
		return err
	})
}

// eventText is one event as a line for a person: sequence, time, type,
// task#attempt, then what the event carries (the reason of a failed trace).
func eventText(ev *queue.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", ev.Seq, ev.Time.UTC().Format(logTime), ev.Type)
	if ev.Task != "" {
		b.WriteString(" " + ev.Task)
		if ev.Attempt > 0 {
			fmt.Fprintf(&b, "#%d", ev.Attempt)
		}
	}
	switch {
	case ev.Type == queue.EventEnqueued:
		fmt.Fprintf(&b, " program=%s max_attempts=%d", gjson.GetBytes(ev.Manifest, "program").Str, ev.MaxAttempts)
	case ev.Trace != nil:
		t := ev.Trace
		fmt.Fprintf(&b, " %s exit %d in %s", t.Status, t.ExitCode, time.Duration(t.DurationMS)*time.Millisecond)
		if t.Signal != "" {
			b.WriteString(" (" + t.Signal + ")")
		}
		if t.Reason != "" {
			b.WriteString(": " + t.Reason)
		}
		if a := t.Acceptance; a != nil {
			fmt.Fprintf(&b, "; acceptance %s exit %d", a.Status, a.ExitCode)
			if a.Reason != "" {
				b.WriteString(": " + a.Reason)
			}
		}
	case ev.Type == queue.EventTruncated:
		fmt.Fprintf(&b, " offset=%d bytes=%d", ev.Offset, ev.Bytes)
	case ev.Type == queue.EventCompacted:
		fmt.Fprintf(&b, " through=%d", ev.Through)
	}
	if ev.Worker != "" {
		b.WriteString(" worker=" + ev.Worker)
	}
	if ev.Reason != "" {
		b.WriteString(" reason=" + strconv.Quote(ev.Reason))
	}
	b.WriteByte('\n')
	return b.String()
}
