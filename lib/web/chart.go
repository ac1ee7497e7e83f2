package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/queue"
)

// Chart is a queue's counts by state over time, drawn server-side as SVG
// polylines (no script): the log replayed through the queue's own reducer
// and sampled at Buckets evenly spaced times from its first event to now.
type Chart struct {
	Width, Height int
	Lines         []ChartLine
	// Max is the largest count drawn (the y axis' top).
	Max        int
	From, To   time.Time
	Finished   int // final-state events in the window (succeeded, failed, cancelled)
	Failed     int
	Throughput string // finished tasks per minute over the window
	FailRate   string // failed / finished, as a percentage
	// Partial: the log's start was compacted into a snapshot, so the
	// counts start from the first event still held.
	Partial bool
	Events  int
}

// ChartLine is one state's polyline.
type ChartLine struct {
	State  string
	Color  string
	Points string
	Last   int
}

// Buckets is how many intervals a chart samples.
const Buckets = 40

var stateColors = map[queue.TaskState]string{
	queue.StateQueued: "#888888", queue.StateRunning: "#1f77b4", queue.StateSucceeded: "#2ca02c",
	queue.StateFailed: "#d62728", queue.StateCancelled: "#9467bd",
}

var errFirst = errors.New("first event read")

// countsOf is st's counts in the order of queue.States.
func countsOf(st *queue.State) [5]int {
	s := queue.SummaryOf(st)
	return [5]int{s.Queued, s.Running, s.Succeeded, s.Failed, s.Cancelled}
}

// chartOf replays b's log into a Chart ending at now. Memory is the
// reducer's state plus Buckets samples, whatever the log's length.
func chartOf(ctx context.Context, b queue.Backend, now time.Time) (*Chart, error) {
	c := &Chart{Width: 640, Height: 200, To: now}
	err := queue.Follow(ctx, b, queue.FollowOptions{}, func(ev *queue.Event) error {
		c.From = ev.Time
		return errFirst
	})
	if err != nil && !errors.Is(err, errFirst) {
		return nil, err
	}
	if c.From.IsZero() {
		return c, nil
	}
	if !c.To.After(c.From) {
		c.To = c.From.Add(time.Second)
	}
	span := c.To.Sub(c.From)
	edge := func(k int) time.Time { return c.From.Add(span * time.Duration(k) / Buckets) }
	var points [Buckets + 1][5]int
	st := queue.NewState()
	k := 0
	err = queue.Follow(ctx, b, queue.FollowOptions{Skipped: func(_, _ uint64) { c.Partial = true }}, func(ev *queue.Event) error {
		for k < Buckets && ev.Time.After(edge(k)) {
			points[k] = countsOf(st)
			k++
		}
		c.Events++
		// An event of a task compacted away cannot apply: the chart is
		// then Partial and counts what it can.
		if st.Apply(ev) != nil {
			return nil
		}
		switch ev.Type {
		case queue.EventSucceeded, queue.EventCancelled:
			c.Finished++
		case queue.EventFailed:
			c.Finished++
			c.Failed++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for ; k <= Buckets; k++ {
		points[k] = countsOf(st)
	}
	for _, p := range points {
		for _, n := range p {
			c.Max = max(c.Max, n)
		}
	}
	top := max(c.Max, 1)
	for si, s := range queue.States {
		var sb strings.Builder
		for k := range points {
			fmt.Fprintf(&sb, "%d,%d ", k*c.Width/Buckets, c.Height-points[k][si]*c.Height/top)
		}
		c.Lines = append(c.Lines, ChartLine{State: string(s), Color: stateColors[s], Points: strings.TrimSpace(sb.String()), Last: points[Buckets][si]})
	}
	if mins := span.Minutes(); mins > 0 {
		c.Throughput = fmt.Sprintf("%.1f", float64(c.Finished)/mins)
	}
	if c.Finished > 0 {
		c.FailRate = fmt.Sprintf("%.1f%%", 100*float64(c.Failed)/float64(c.Finished))
	}
	return c, nil
}

// ChartMaxAge is how long a queue's chart is reused while its log grows:
// a chart replays the whole log (about a second per 200,000 tasks), so a
// busy queue's page shows counts at most this old; an unchanged log's
// chart is reused until the log changes.
const ChartMaxAge = 10 * time.Second

type cachedChart struct {
	seq   uint64
	at    time.Time
	chart *Chart
}

// chart is the queue's chart: the cached one when the log is unchanged
// (the same last sequence) or the cached one is younger than ChartMaxAge,
// else a new replay (in a heavy slot).
func (s *Server) chart(ctx context.Context, name string, b queue.Backend, seq uint64) (*Chart, error) {
	now := time.Now()
	s.chartMu.Lock()
	c := s.charts[name]
	s.chartMu.Unlock()
	if c != nil && (c.seq == seq || now.Sub(c.at) < ChartMaxAge) {
		return c.chart, nil
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ch, err := chartOf(ctx, b, now)
	if err != nil {
		return nil, err
	}
	s.chartMu.Lock()
	s.charts[name] = &cachedChart{seq: seq, at: now, chart: ch}
	s.chartMu.Unlock()
	return ch, nil
}
