// Package agentmetrics counts an agent run's work as Prometheus metrics,
// with the official client (client_golang), from the loop's own events
// (lib/agent's Options.Observe), as lib/agent/agenttrace builds spans from
// them: steps by action, refusals by kind, verifications by result, the
// provider's latency and tokens, and runs by status. The loop is
// untouched; metrics add one callback per event.
//
// Names follow Prometheus' conventions (artagent_ prefix, units in the
// name, _total on counters). Every label takes its value from a fixed set:
// a value the set does not name (an action a future provider invents, a
// malformed reply's empty action) counts as "other", so a model cannot
// grow the series.
package agentmetrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
)

// Other is the label value of anything outside a label's fixed set.
const Other = "other"

// Actions are the values of artagent_steps_total's action label.
var Actions = []string{string(provider.ActionReadFile), string(provider.ActionReplaceText),
	string(provider.ActionRunTool), string(provider.ActionVerify), string(provider.ActionFinish), Other}

// Metrics are one artagent process's metrics, in a registry of their own.
type Metrics struct {
	reg      *prometheus.Registry
	steps    *prometheus.CounterVec
	refusals *prometheus.CounterVec
	verify   *prometheus.CounterVec
	latency  prometheus.Histogram
	tokens   *prometheus.CounterVec
	runs     *prometheus.CounterVec
	// truncated counts replies cut off at the token limit (no action).
	truncated prometheus.Counter
	opt       Options
}

// Options say what the events come from.
type Options struct {
	// NoProvider: the decisions come from an MCP client, not a provider,
	// so a step's latency (the core's bookkeeping, not a model's answer)
	// is not a provider request's duration.
	NoProvider bool
}

// New returns metrics with every labelled series present at zero, so a
// rate() over them has a start and a dashboard shows what did not happen.
func New(opt Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), opt: opt}
	m.steps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artagent_steps_total",
		Help: "Steps taken, by the action decided (read_file, replace_text, run_tool, verify, finish; other for a reply that named none)."}, []string{"action"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artagent_refusals_total",
		Help: "Decisions refused and told to the model, by kind (docs/artagent.md)."}, []string{"kind"})
	m.verify = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artagent_verify_total",
		Help: "Verification commands run, by result (passed, failed)."}, []string{"result"})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "artagent_provider_request_duration_seconds",
		Help:    "Time the provider took to answer one step (retries included).",
		Buckets: []float64{.005, .01, .05, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artagent_provider_tokens_total",
		Help: "Tokens the provider reported, by kind (input, output)."}, []string{"kind"})
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "artagent_runs_total",
		Help: "Runs ended, by status (finished, step_limit, budget_limit, timeout, denied, format_error, provider_error, cancelled, truncated)."}, []string{"status"})
	m.truncated = prometheus.NewCounter(prometheus.CounterOpts{Name: "artagent_replies_truncated_total",
		Help: "Provider replies cut off at their token limit (the step did nothing; the model is told)."})
	for _, a := range Actions {
		m.steps.WithLabelValues(a)
	}
	for _, r := range agent.Refusals {
		m.refusals.WithLabelValues(string(r))
	}
	m.refusals.WithLabelValues(Other)
	m.verify.WithLabelValues("passed")
	m.verify.WithLabelValues("failed")
	m.tokens.WithLabelValues("input")
	m.tokens.WithLabelValues("output")
	for _, s := range agent.Statuses {
		m.runs.WithLabelValues(string(s))
	}
	m.runs.WithLabelValues(Other)
	m.reg.MustRegister(m.steps, m.refusals, m.verify, m.latency, m.tokens, m.runs, m.truncated,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the metrics are, for a test's or another exporter's
// gatherer.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the exposition format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Observe counts one event. It is safe for concurrent use (the
// collectors are), though the loop calls it from one goroutine.
func (m *Metrics) Observe(ev *agent.Event) {
	switch ev.Type {
	case agent.EventStep:
		m.steps.WithLabelValues(bounded(string(ev.Action), Actions)).Inc()
		if ev.LatencyMS != nil && !m.opt.NoProvider {
			m.latency.Observe(float64(*ev.LatencyMS) / 1000)
		}
		if u := ev.Usage; u != nil {
			m.tokens.WithLabelValues("input").Add(float64(max(u.InputTokens, 0)))
			m.tokens.WithLabelValues("output").Add(float64(max(u.OutputTokens, 0)))
		}
	case agent.EventRejected:
		m.refusals.WithLabelValues(bounded(string(ev.Refusal), refusals)).Inc()
	case agent.EventVerify:
		if ev.Passed != nil {
			result := "failed"
			if *ev.Passed {
				result = "passed"
			}
			m.verify.WithLabelValues(result).Inc()
		}
	case agent.EventTruncated:
		m.truncated.Inc()
	case agent.EventResult:
		m.runs.WithLabelValues(bounded(string(ev.Status), statuses)).Inc()
	}
}

var refusals, statuses = strs(agent.Refusals), strs(agent.Statuses)

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// bounded is v when set names it, else Other.
func bounded(v string, set []string) string {
	for _, s := range set {
		if v == s {
			return v
		}
	}
	return Other
}
