package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/worker"
)

// StatusCmd shows tasks.
type StatusCmd struct {
	ID       string        `arg:"" optional:"" name:"id" help:"One task (default: every task, in enqueue order)."`
	Summary  bool          `name:"summary" help:"Counts per state instead of tasks (a QueueSummary document)."`
	Watch    bool          `name:"watch" short:"w" help:"Keep showing: redraw on a terminal, print again on each change otherwise. With ID, stop once the task is finished."`
	Interval time.Duration `name:"interval" default:"1s" placeholder:"D" help:"How often --watch looks for changes."`
}

// Help shows examples.
func (c *StatusCmd) Help() string {
	return `Replays the log without recovering or writing anything (not even a lock
file). JSON: one TaskStatus for an ID, else one per line (JSON Lines); a
table on a terminal or with -o text. An unknown ID exits 4. --watch exits
130 on Ctrl-C, or 0 when the watched task finishes.

Example:
  artq status
  artq status --summary
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
	q := queue.New(b)
	tails, _ := f.tailDir(g) // none: no tail shown
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
				if t.State == queue.StateFailed && ts.Last != nil {
					ts.OutputTail = worker.ReadTail(tails, ts.ID, ts.Last.Attempt)
				}
				finished = t.State.Terminal()
				render = func() error {
					if err := printStatuses(std, g, []queue.TaskStatus{ts}); err != nil || g.JSON(std) || ts.OutputTail == "" {
						return err
					}
					return printTail(std, ts)
				}
			default:
				list := make([]queue.TaskStatus, 0, st.Len())
				st.Tasks(func(t *queue.Task) bool {
					list = append(list, queue.StatusOf(t))
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
