package agentmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
)

func step(action provider.Action, latencyMS int64, in, out int64) *agent.Event {
	ev := &agent.Event{Type: agent.EventStep, Time: time.Now(), Action: action, LatencyMS: &latencyMS}
	if in+out > 0 {
		ev.Usage = &provider.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	}
	return ev
}

func rejected(r agent.Refusal) *agent.Event {
	return &agent.Event{Type: agent.EventRejected, Refusal: r}
}

func verified(passed bool) *agent.Event {
	return &agent.Event{Type: agent.EventVerify, Passed: &passed}
}

func result(s agent.Status) *agent.Event { return &agent.Event{Type: agent.EventResult, Status: s} }

func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    Options
		events []*agent.Event
		want   map[string]float64 // "metric{label}" (or "metric") → value
	}{
		{
			name: "verified finish",
			events: []*agent.Event{
				step(provider.ActionReadFile, 120, 100, 20), {Type: agent.EventObservation},
				step(provider.ActionReplaceText, 80, 150, 30), {Type: agent.EventObservation},
				step(provider.ActionVerify, 40, 200, 5), verified(true),
				step(provider.ActionFinish, 30, 210, 7),
				result(agent.StatusFinished),
			},
			want: map[string]float64{
				"steps{read_file}": 1, "steps{replace_text}": 1, "steps{verify}": 1, "steps{finish}": 1,
				"steps{run_tool}": 0, "steps{other}": 0,
				"tokens{input}": 660, "tokens{output}": 62,
				"verify{passed}": 1, "verify{failed}": 0,
				"runs{finished}": 1, "runs{step_limit}": 0,
				"latency_count": 4, "latency_sum": 0.27,
			},
		},
		{
			name: "refusals, a failed verify, a malformed reply and the step limit",
			events: []*agent.Event{
				step(provider.ActionFinish, 10, 0, 0), rejected(agent.RefusalDebt),
				step(provider.ActionRunTool, 10, 0, 0), rejected(agent.RefusalProgram),
				step("", 10, 0, 0), rejected(agent.RefusalFormat),
				step(provider.ActionVerify, 10, 0, 0), verified(false),
				result(agent.StatusStepLimit),
			},
			want: map[string]float64{
				"steps{finish}": 1, "steps{run_tool}": 1, "steps{other}": 1, "steps{verify}": 1,
				"refusals{debt}": 1, "refusals{program}": 1, "refusals{format}": 1, "refusals{path}": 0, "refusals{other}": 0,
				"verify{passed}": 0, "verify{failed}": 1,
				"tokens{input}": 0, "tokens{output}": 0,
				"runs{step_limit}": 1, "runs{finished}": 0,
				"latency_count": 4,
			},
		},
		{
			name: "values outside the fixed sets count as other",
			events: []*agent.Event{
				step("delete_everything", 1, 0, 0), rejected("novel"),
				{Type: agent.EventTruncated},
				result("exploded"),
			},
			want: map[string]float64{
				"steps{other}": 1, "refusals{other}": 1, "runs{other}": 1, "truncated": 1,
			},
		},
		{
			name:   "a step without latency or usage",
			events: []*agent.Event{{Type: agent.EventStep, Action: provider.ActionReadFile}, {Type: agent.EventObservation}},
			want:   map[string]float64{"steps{read_file}": 1, "latency_count": 0, "tokens{input}": 0},
		},
		{
			name:   "an MCP client's call: its latency is no provider's",
			opt:    Options{NoProvider: true},
			events: []*agent.Event{step(provider.ActionReadFile, 3, 0, 0), {Type: agent.EventObservation}, result(agent.StatusCancelled)},
			want:   map[string]float64{"steps{read_file}": 1, "latency_count": 0, "runs{cancelled}": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(tc.opt)
			for _, ev := range tc.events {
				m.Observe(ev)
			}
			for key, want := range tc.want {
				if got := value(t, m, key); got < want-1e-9 || got > want+1e-9 {
					t.Errorf("%s = %v; want %v", key, got, want)
				}
			}
		})
	}
}

// value reads one series from the registry by a short key:
// "steps{read_file}", "latency_count".
func value(t *testing.T, m *Metrics, key string) float64 {
	t.Helper()
	name, label, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
	full := map[string]string{"steps": "artagent_steps_total", "refusals": "artagent_refusals_total",
		"verify": "artagent_verify_total", "tokens": "artagent_provider_tokens_total", "runs": "artagent_runs_total",
		"truncated":     "artagent_replies_truncated_total",
		"latency_count": "artagent_provider_request_duration_seconds", "latency_sum": "artagent_provider_request_duration_seconds"}[name]
	if full == "" {
		t.Fatalf("unknown key %q", key)
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != full {
			continue
		}
		for _, s := range mf.GetMetric() {
			if label != "" && (len(s.GetLabel()) != 1 || s.GetLabel()[0].GetValue() != label) {
				continue
			}
			switch name {
			case "latency_count":
				return float64(s.GetHistogram().GetSampleCount())
			case "latency_sum":
				return s.GetHistogram().GetSampleSum()
			}
			return s.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s", key)
	return 0
}

// series counts the registry's series.
func series(t *testing.T, m *Metrics) int {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

// TestSeriesBounded: whatever the events say, the label values stay in
// the fixed sets, and the exposition passes the registry's own checks.
func TestSeriesBounded(t *testing.T) {
	m := New(Options{})
	before := series(t, m)
	for i := range 50 {
		m.Observe(step(provider.Action(strings.Repeat("x", i)), 1, 1, 1))
		m.Observe(rejected(agent.Refusal(strings.Repeat("y", i))))
		m.Observe(result(agent.Status(strings.Repeat("z", i))))
	}
	if after := series(t, m); after != before {
		t.Fatalf("series grew from %d to %d on unknown label values", before, after)
	}
}

// BenchmarkObserveStep is the metrics' cost per step: a step event and
// its outcome.
func BenchmarkObserveStep(b *testing.B) {
	m := New(Options{})
	s, o := step(provider.ActionRunTool, 120, 100, 20), &agent.Event{Type: agent.EventObservation}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(s)
		m.Observe(o)
	}
}
