package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prometheus is a Prometheus server the test started, scraping one target
// every second as job.
type prometheus struct{ addr string }

func startPrometheus(t *testing.T, job, target string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed: .ci/run installs Debian's prometheus package")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	p := &prometheus{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: ['%s']\n", job, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, f := newOutFile(t, "prometheus.out")
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready in 60s:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query returns the value of a PromQL expression that yields one sample,
// or -1 when it yields none.
func (p *prometheus) query(t *testing.T, expr string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("prometheus query %s: %v (%s)", expr, err, r.Status)
	}
	if len(r.Data.Result) != 1 {
		return -1
	}
	v, _ := strconv.ParseFloat(fmt.Sprint(r.Data.Result[0].Value[1]), 64)
	return v
}

// TestPrometheusScrapesWorker: a real Prometheus scrapes artq work
// --metrics while the worker drains a queue of passing and failing tasks;
// what Prometheus holds matches artq status, and promtool accepts the
// exposition.
func TestPrometheusScrapesWorker(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startPrometheus(t, "artq", target)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	env := []string{"ART_HOME=" + filepath.Join(dir, "home"), "ART_EVENTS=", "GORACE=atexit_sleep_ms=0"}
	const ok, bad = 14, 6
	for i := range ok + bad {
		prog := "true"
		if i%3 == 0 && i/3 < bad {
			prog = "false"
		}
		runTool(t, ctx, dir, env, "artq", "enqueue", "--id", fmt.Sprintf("t%02d", i), "--", prog)
	}
	// Not --drain: the worker stays up (and scraped) until the test has
	// read Prometheus.
	w := exec.CommandContext(ctx, filepath.Join(binDir, "artq"), "work", "-q", "-j", "2", "--allow", "true", "--allow", "false", "--metrics", target)
	w.Dir, w.Env = dir, append(os.Environ(), env...)
	werr, f := newOutFile(t, "worker.err")
	w.Stderr = f
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		w.Process.Signal(syscall.SIGTERM)
		w.Wait()
	}()
	deadline := time.Now().Add(60 * time.Second)
	for p.query(t, `sum(artq_tasks_finished_total{job="artq"})`) != ok+bad || p.query(t, `artq_queue_tasks{state="queued"}`) != 0 || p.query(t, `artq_queue_tasks{state="running"}`) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("prometheus never saw %d finished tasks; worker stderr:\n%s", ok+bad, werr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	status := runTool(t, ctx, dir, env, "artq", "status", "--summary")
	var sum struct{ Total, Queued, Running, Succeeded, Failed, Cancelled int }
	if err := json.Unmarshal([]byte(status), &sum); err != nil {
		t.Fatalf("artq status --summary: %v\n%s", err, status)
	}
	if sum.Succeeded != ok || sum.Failed != bad {
		t.Fatalf("artq status: %s; want %d succeeded, %d failed", status, ok, bad)
	}
	for _, c := range []struct {
		expr string
		want int
	}{
		{`artq_tasks_finished_total{state="succeeded"}`, sum.Succeeded},
		{`artq_tasks_finished_total{state="failed"}`, sum.Failed},
		{`artq_tasks_finished_total{state="cancelled"}`, sum.Cancelled},
		{`artq_tasks_claimed_total`, sum.Total},
		{`artq_attempt_duration_seconds_count{state="succeeded"}`, sum.Succeeded},
		{`artq_attempts_running`, sum.Running},
		{`artq_queue_tasks{state="succeeded"}`, sum.Succeeded},
		{`artq_queue_tasks{state="failed"}`, sum.Failed},
		{`artq_queue_tasks{state="queued"}`, sum.Queued},
		{`sum(artq_queue_tasks)`, sum.Total},
		{`artq_pool_supervisors_reused_total + artq_pool_supervisors_started_total`, sum.Total},
	} {
		if got := p.query(t, c.expr); got != float64(c.want) {
			t.Errorf("prometheus %s = %v; artq status says %d", c.expr, got, c.want)
		}
	}

	body := exposition(t, target)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "artq_") && strings.Contains(line, "t0") {
			t.Errorf("a series names a task: %s (labels must be bounded)", line)
		}
	}
}

// exposition scrapes target's /metrics and checks it with promtool,
// Prometheus' own linter.
func exposition(t *testing.T, target string) string {
	t.Helper()
	resp, err := http.Get("http://" + target + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(string(body))
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	return string(body)
}
