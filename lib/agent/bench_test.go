package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/mock"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// BenchmarkLoopStep measures one loop step with the mock provider and a
// no-op tool (`true`), against one raw execx run of `true` under the same
// policy and supervision, measured in the same benchmark: the ratio is the
// loop's overhead on top of starting the tool. Runs are 30 steps long (the
// default --max-steps), so request hashing sees a realistic history.
//
//	go test -run '^$' -bench LoopStep -benchtime 300x ./lib/agent/
func BenchmarkLoopStep(b *testing.B) {
	for _, withTranscript := range []bool{false, true} {
		name := "events"
		if withTranscript {
			name = "events+transcript"
		}
		b.Run(name, func(b *testing.B) { benchLoop(b, withTranscript) })
	}
}

func benchLoop(b *testing.B, withTranscript bool) {
	ws := b.TempDir()
	const runLen = 30
	script := strings.Repeat(`{"action":"run_tool","program":"true"}`+"\n", runLen)
	cfg := agent.Config{Task: "bench", Workspace: ws, Allow: []string{"true"}, Verify: []string{"true"}, MaxSteps: runLen}

	// Baseline: the same number of raw supervised execx runs of true.
	pol := &execx.Policy{TypeMeta: jsonx.Meta(execx.KindPolicy), Allow: []string{"true"}, Workspace: ws}
	pol.Default()
	task := execx.NewTask("true")
	raw := func(n int) time.Duration {
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := execx.Run(context.Background(), pol, task, execx.Options{Supervised: true}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	raw(5) // warm up

	b.ResetTimer()
	var loopTime, rawTime time.Duration
	for done := 0; done < b.N; {
		n := min(runLen, b.N-done)
		cfg.MaxSteps = n
		opt := agent.Options{}
		if withTranscript {
			w, err := transcript.Create(filepath.Join(b.TempDir(), "t.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			opt.Transcript = w
			defer w.Close()
		}
		var events strings.Builder
		opt.Events = &events
		start := time.Now()
		res, err := agent.Run(context.Background(), cfg, mock.New(script), opt)
		loopTime += time.Since(start)
		if err != nil || res.Steps != n {
			b.Fatalf("run: %+v, %v", res, err)
		}
		rawTime += raw(n)
		done += n
	}
	b.StopTimer()
	perStep := float64(loopTime.Nanoseconds()) / float64(b.N)
	perRaw := float64(rawTime.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perStep/1e6, "ms/step")
	b.ReportMetric(perRaw/1e6, "ms/raw-run")
	b.ReportMetric((perStep-perRaw)/1e6, "ms-overhead/step")
	b.ReportMetric(perStep/perRaw, "step/raw")
}

// BenchmarkLoopStepNoProcess is the loop's own cost per step (decode,
// request hash over a growing history, editor read, truncation, event
// encoding) with no process started: read_file of a small file.
func BenchmarkLoopStepNoProcess(b *testing.B) {
	ws := b.TempDir()
	if err := writeFile(filepath.Join(ws, "a.txt"), strings.Repeat("some text\n", 100)); err != nil {
		b.Fatal(err)
	}
	const runLen = 30
	script := strings.Repeat(`{"action":"read_file","path":"a.txt"}`+"\n", runLen)
	cfg := agent.Config{Task: "bench", Workspace: ws, Verify: []string{"true"}}
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(runLen, b.N-done)
		cfg.MaxSteps = n
		var events strings.Builder
		res, err := agent.Run(context.Background(), cfg, mock.New(script), agent.Options{Events: &events})
		if err != nil || res.Steps != n {
			b.Fatalf("run: %+v, %v", res, err)
		}
		done += n
	}
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
