// Package queuemetrics is a worker's Prometheus metrics, with the official
// client (client_golang): tasks claimed and finished (by state), attempt
// durations, attempts running, recoveries, lease losses, the supervisor
// pool's reuse, and the queue's depth by state read at scrape time. Names
// follow Prometheus' conventions (artq_ prefix, units in the name, _total
// on counters); labels take only bounded values (states, the queue's
// name), never a task id.
//
// It learns what happens from the worker's own reports (worker.Hooks, the
// transition log): it changes nothing the worker does.
package queuemetrics

import (
	"context"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// Metrics are one worker's metrics, in a registry of their own.
type Metrics struct {
	reg       *prometheus.Registry
	claimed   prometheus.Counter
	finished  *prometheus.CounterVec
	recovered prometheus.Counter
	duration  *prometheus.HistogramVec
	running   prometheus.Gauge
	leaseLost prometheus.Counter

	mu      sync.Mutex
	pool    *execx.Pool
	started map[string]bool // attempts counted in running
}

// Depth reads the queue's task counts by state (the state index, for a
// file queue: cheap, and what artq status reads).
type Depth func(ctx context.Context) (queue.Summary, error)

// New returns the metrics of a worker of the named queue. depth, if set,
// is read at every scrape for artq_queue_tasks.
func New(queueName string, depth Depth) *Metrics {
	reg := prometheus.NewRegistry()
	f := prometheus.WrapRegistererWith(prometheus.Labels{"queue": queueName}, reg)
	m := &Metrics{reg: reg, started: map[string]bool{}}
	m.claimed = prometheus.NewCounter(prometheus.CounterOpts{Name: "artq_tasks_claimed_total",
		Help: "Attempts this worker claimed."})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artq_tasks_finished_total",
		Help: "Attempts this worker finished, by the task's resulting state (succeeded, failed, cancelled)."}, []string{"state"})
	m.recovered = prometheus.NewCounter(prometheus.CounterOpts{Name: "artq_tasks_requeued_total",
		Help: "Attempts of dead workers this worker's recovery requeued (those settled from their trace count as finished)."})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "artq_attempt_duration_seconds",
		Help:    "Run time of finished attempts (command plus acceptance), by resulting state.",
		Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}}, []string{"state"})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Name: "artq_attempts_running",
		Help: "Attempts this worker is running now."})
	m.leaseLost = prometheus.NewCounter(prometheus.CounterOpts{Name: "artq_worker_lease_losses_total",
		Help: "Times this worker found its lease lost (it then stops claiming and exits)."})
	for _, s := range []queue.TaskState{queue.StateSucceeded, queue.StateFailed, queue.StateCancelled} {
		m.finished.WithLabelValues(string(s))
	}
	pool := func(name, help string, v func(execx.PoolStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			m.mu.Lock()
			p := m.pool
			m.mu.Unlock()
			return float64(v(p.Stats()))
		})
	}
	f.MustRegister(m.claimed, m.finished, m.recovered, m.duration, m.running, m.leaseLost,
		pool("artq_pool_supervisors_reused_total", "Runs that reused an idle pooled supervisor.", func(s execx.PoolStats) int64 { return s.Reused }),
		pool("artq_pool_supervisors_started_total", "Pooled supervisors started (no idle one to reuse).", func(s execx.PoolStats) int64 { return s.Started }),
		pool("artq_pool_supervisors_discarded_total", "Pooled supervisors discarded after a run instead of kept.", func(s execx.PoolStats) int64 { return s.Discarded }),
	)
	if depth != nil {
		f.MustRegister(&depthCollector{depth: depth, desc: prometheus.NewDesc("artq_queue_tasks",
			"Tasks in the queue by state, read from the queue (its state index) at scrape time.", []string{"state"}, nil)})
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the exposition format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Log wraps a worker's transition log (Config.Log; next may be nil) with
// the counters it feeds.
func (m *Metrics) Log(next func(worker.Transition)) func(worker.Transition) {
	return func(tr worker.Transition) {
		switch {
		case tr.State == queue.StateRunning:
			m.claimed.Inc()
		case tr.State == queue.StateQueued:
			// Only recovery requeues.
			m.recovered.Inc()
		case tr.State.Terminal():
			m.finished.WithLabelValues(string(tr.State)).Inc()
			m.duration.WithLabelValues(string(tr.State)).Observe(tr.Duration.Seconds())
		}
		if next != nil {
			next(tr)
		}
	}
}

// LeaseLost counts a lost lease.
func (m *Metrics) LeaseLost() { m.leaseLost.Inc() }

// Runner implements worker.Hooks: an attempt counts as running from its
// first run to AttemptDone, and the pool the runs use is remembered for
// the pool counters.
func (m *Metrics) Runner(r *worker.Run, next execx.RunFunc) execx.RunFunc {
	return func(ctx context.Context, pol *execx.Policy, task *execx.Task, o execx.Options) (*execx.Result, error) {
		m.mu.Lock()
		if m.pool == nil {
			m.pool = o.Pool
		}
		if !m.started[r.Task.ID] {
			m.started[r.Task.ID] = true
			m.running.Inc()
		}
		m.mu.Unlock()
		return next(ctx, pol, task, o)
	}
}

// AttemptDone implements worker.Hooks.
func (m *Metrics) AttemptDone(task string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started[task] {
		delete(m.started, task)
		m.running.Dec()
	}
}

var _ worker.Hooks = (*Metrics)(nil)

// depthCollector reads the queue's counts at each scrape.
type depthCollector struct {
	depth Depth
	desc  *prometheus.Desc
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.depth(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for state, n := range map[queue.TaskState]int{queue.StateQueued: s.Queued, queue.StateRunning: s.Running,
		queue.StateSucceeded: s.Succeeded, queue.StateFailed: s.Failed, queue.StateCancelled: s.Cancelled} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(state))
	}
}
