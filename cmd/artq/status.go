package main

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/stateindex"
	"github.com/art-runtime/art/lib/queue/worker"
)

// StatusCmd shows tasks.
type StatusCmd struct {
	ID        string        `arg:"" optional:"" name:"id" help:"One task (default: every task, in enqueue order)."`
	Summary   bool          `name:"summary" help:"Counts per state instead of tasks (a QueueSummary document)."`
	State     string        `name:"state" enum:",queued,running,succeeded,failed,cancelled" default:"" placeholder:"STATE" help:"Only tasks in STATE (queued, running, succeeded, failed or cancelled), in enqueue order."`
	Watch     bool          `name:"watch" short:"w" help:"Keep showing: redraw on a terminal, print again on each change otherwise. With ID, stop once the task is finished."`
	NoHistory bool          `name:"no-history" help:"With ID: leave out the attempt history, which is a read of the whole log (the state index does not hold it)."`
	Interval  time.Duration `name:"interval" default:"1s" placeholder:"D" help:"How often --watch looks for changes."`
}

// Help shows examples.
func (c *StatusCmd) Help() string {
	return `Reads the queue without recovering or writing anything (not even a lock
file): on the file backend from the state index (state.index, kept by
compact, large enqueues and workers) plus the events appended after it,
else, or when the index is missing, damaged or from another log, by
replaying the log; the output is the same either way. JSON: one TaskStatus
for an ID, else one per line (JSON Lines); a table on a terminal or with
-o text. Status of one ID also shows its attempt history, read from the log:
each claim's attempt, worker, time and result, so a task that ran again
after its worker died (at-least-once) shows both runs ("ran again after its
worker died"); --no-history leaves it out. An unknown ID exits 4. --watch exits 130 on Ctrl-C, or 0 when the
watched task finishes.

Example:
  artq status
  artq status --summary
  artq status --state failed -o json | jq -r .id
  artq status build -o json | jq -r .state
  artq status build --watch -o json | tail -n 1`
}

// Run shows status.
func (c *StatusCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	if c.ID != "" {
		if err := queue.ValidName("id", c.ID); err != nil {
			return err
		}
		if c.Summary {
			return exitcode.Errorf(exitcode.Usage, "--summary counts the whole queue: give no ID")
		}
		if c.State != "" {
			return exitcode.Errorf(exitcode.Usage, "--state filters the list of tasks: give no ID")
		}
	} else if c.NoHistory {
		return exitcode.Errorf(exitcode.Usage, "--no-history: only status of one ID shows a history")
	}
	if c.Summary && c.State != "" {
		return exitcode.Errorf(exitcode.Usage, "--summary counts every state: drop --state")
	}
	if c.Interval <= 0 {
		return exitcode.Errorf(exitcode.Usage, "--interval: must be positive")
	}
	b, err := f.open(g, true)
	if err != nil {
		return err
	}
	defer b.Close()
	warnStaleLock(std, b)
	tails, _ := f.tailDir(g) // none: no tail shown
	if !c.Watch {
		if done, err := c.fromIndex(ctx, std, g, b, tails); done {
			return err
		}
	}
	q := queue.New(b)
	redraw := c.Watch && std.OutTTY && !g.JSON(std)
	var shown uint64
	first := true
	for {
		var render func() error
		finished := false
		err := q.View(ctx, func(st *queue.State) error {
			if !first && st.Seq == shown && !redraw {
				return nil
			}
			shown = st.Seq
			switch {
			case c.Summary:
				s := queue.SummaryOf(st)
				render = func() error {
					if g.JSON(std) {
						return writeJSONLine(std.Out, &s)
					}
					return queue.WriteSummaryText(std.Out, s)
				}
			case c.ID != "":
				t := st.Task(c.ID)
				if t == nil {
					return fmt.Errorf("task %s: %w", c.ID, queue.ErrNotFound)
				}
				ts := queue.StatusOf(t)
				finished = t.State.Terminal()
				render = func() error { return c.showTask(ctx, std, g, b, tails, ts) }
			default:
				list := make([]queue.TaskStatus, 0, st.Len())
				st.Tasks(func(t *queue.Task) bool {
					if c.State == "" || t.State == queue.TaskState(c.State) {
						list = append(list, queue.StatusOf(t))
					}
					return true
				})
				render = func() error { return printStatuses(std, g, list) }
			}
			return nil
		})
		if err != nil {
			return err
		}
		if render != nil {
			if redraw {
				w := bufio.NewWriter(std.Out)
				fmt.Fprintf(w, "\x1b[H\x1b[2JEvery %s: artq status   %s\n\n", c.Interval, now().Format("15:04:05"))
				w.Flush()
			}
			if err := render(); err != nil {
				return err
			}
		}
		first = false
		if !c.Watch || finished {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, c.Interval)
		err = b.Wait(wctx, shown)
		cancel()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil && wctx.Err() == nil {
			return err
		}
	}
}

// fromIndex answers from the file backend's state index and the log's
// tail after it, when the index is there and checks; done is false when
// the caller must replay instead (no index, a damaged, stale-beyond-use or
// foreign one, an unknown ID, which the replay confirms). A list checks
// the whole index before it prints a task, so nothing the index printed
// is ever followed by a replay's rest. Its output is the replay's, byte
// for byte.
func (c *StatusCmd) fromIndex(ctx context.Context, std cli.IO, g *cli.Globals, b queue.Backend, tails string) (done bool, err error) {
	fb, ok := b.(*file.Backend)
	if !ok {
		return false, nil
	}
	v, err := stateindex.Load(ctx, fb.Dir())
	if err != nil {
		return false, nil
	}
	defer v.Close()
	switch {
	case c.Summary:
		s := v.Summary()
		if g.JSON(std) {
			return true, writeJSONLine(std.Out, &s)
		}
		return true, queue.WriteSummaryText(std.Out, s)
	case c.ID != "":
		t, program, err := v.Task(c.ID)
		if err != nil || t == nil {
			return false, nil
		}
		return true, c.showTask(ctx, std, g, b, tails, queue.StatusWith(t, program))
	}
	if !g.JSON(std) {
		var list []queue.TaskStatus
		err := v.Tasks(queue.TaskState(c.State), func(t *queue.Task, program string) error {
			list = append(list, queue.StatusWith(t, program))
			return nil
		})
		if err != nil {
			return false, nil
		}
		return true, printStatuses(std, g, list)
	}
	// JSON Lines stream, so `status --state queued | head` stops early.
	w := bufio.NewWriterSize(std.Out, 1<<16)
	var werr error
	printed := 0
	err = v.Tasks(queue.TaskState(c.State), func(t *queue.Task, program string) error {
		ts := queue.StatusWith(t, program)
		if werr = writeJSONLine(w, &ts); werr != nil {
			return werr
		}
		printed++
		return nil
	})
	if werr != nil {
		return true, werr
	}
	if err != nil && printed == 0 {
		// A damaged index (checked whole before any task is printed).
		return false, nil
	}
	if err != nil {
		// Past the whole-file check only a forged row fails: never skip
		// to a later replay's list, which another writer may have moved.
		w.Flush()
		return true, &queue.CorruptError{Path: filepath.Join(fb.Dir(), stateindex.FileName), Offset: -1,
			Why: err.Error() + " (remove the file; writers rebuild it)"}
	}
	return true, w.Flush()
}

// showTask prints one task's status with its attempt history (each claim
// the log holds: a re-run after a worker died is a second run of the same
// attempt), and under it (on a terminal) the kept output tail of its
// failed attempt. --watch and --no-history show the status alone: the
// history is a read of the whole log.
func (c *StatusCmd) showTask(ctx context.Context, std cli.IO, g *cli.Globals, b queue.Backend, tails string, ts queue.TaskStatus) error {
	if ts.State == queue.StateFailed && ts.Last != nil {
		ts.OutputTail = worker.ReadTail(tails, ts.ID, ts.Last.Attempt)
	}
	if !c.Watch && !c.NoHistory {
		h, err := queue.ReadHistory(ctx, b, ts.ID)
		if err != nil {
			return err
		}
		ts.History, ts.HistoryFrom = h.Runs, h.From
	}
	if err := printStatuses(std, g, []queue.TaskStatus{ts}); err != nil || g.JSON(std) {
		return err
	}
	if err := printHistory(std, ts); err != nil || ts.OutputTail == "" {
		return err
	}
	return printTail(std, ts)
}

// printHistory shows a task's claims under its status, one line each:
// attempt, when and by which worker it was claimed, how it ended.
func printHistory(std cli.IO, ts queue.TaskStatus) error {
	if len(ts.History) == 0 && ts.HistoryFrom == 0 {
		return nil
	}
	w := bufio.NewWriter(std.Out)
	w.WriteString("\nattempts:\n")
	if ts.HistoryFrom > 0 {
		fmt.Fprintf(w, "  (events before %d were compacted into the snapshot: earlier claims are not shown)\n", ts.HistoryFrom)
	}
	for _, r := range ts.History {
		fmt.Fprintf(w, "  %d  claimed %s by %s (claim %d): ", r.Attempt, r.ClaimedAt.UTC().Format(logTime), r.Worker, r.Claim)
		switch {
		case r.Result == "":
			w.WriteString("running")
		case r.Result == queue.EventRequeued:
			w.WriteString("requeued, its worker died before a trace")
		default:
			w.WriteString(string(r.Result))
			if r.Status != "" {
				fmt.Fprintf(w, " (%s in %s)", r.Status, time.Duration(r.DurationMS)*time.Millisecond)
			}
			if r.Reason != "" {
				w.WriteString(": " + r.Reason)
			}
		}
		if r.RanAgain {
			w.WriteString("; ran again after its worker died")
		}
		w.WriteByte('\n')
	}
	return w.Flush()
}

// printTail shows a failed attempt's kept output tail under its status.
func printTail(std cli.IO, ts queue.TaskStatus) error {
	w := bufio.NewWriter(std.Out)
	fmt.Fprintf(w, "\noutput tail of attempt %d (redacted, at most %d bytes):\n", ts.Last.Attempt, worker.MaxTail)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(ts.OutputTail, "\n"), "\n") {
		fmt.Fprintf(w, "  %s", strings.TrimSuffix(l, "\n"))
		w.WriteByte('\n')
	}
	return w.Flush()
}

// warnStaleLock tells stderr about a file queue's append lock held by a
// stopped process or for more than a few seconds: every writer (enqueue,
// cancel, workers) waits behind it until --lock-timeout.
func warnStaleLock(std cli.IO, b queue.Backend) {
	fb, ok := b.(*file.Backend)
	if !ok {
		return
	}
	h, err := fb.LockHolder()
	if err != nil || h == nil || (h.State != "stopped" && time.Since(h.Since) < 5*time.Second) {
		return
	}
	fmt.Fprintf(std.Err, "artq: warning: the append lock of %s is held by %s; writers wait for it up to --lock-timeout\n", fb.Dir(), h)
}

// warnIndex tells stderr that a writer could not refresh the state index
// (a cache: status replays the log instead).
func warnIndex(std cli.IO, err error) {
	if err != nil {
		fmt.Fprintf(std.Err, "artq: warning: %v (status replays the log instead)\n", err)
	}
}
