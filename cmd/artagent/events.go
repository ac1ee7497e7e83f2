package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/obs"
)

// eventObserver opens the --events sinks (stdout is the sink "stdout"
// writes to; nil refuses that sink) and returns what sends each AgentEvent
// to them as subject, and what closes them. A sink that cannot open is a
// warning: events are never worth failing the work for.
func eventObserver(ctx context.Context, std cli.IO, sinks []string, stdout io.Writer, subject string) (func(*agent.Event), func()) {
	if len(sinks) == 0 {
		return nil, func() {}
	}
	em, err := obs.Open(sinks, obs.Options{Warn: obs.WarnTo("artagent", std.Err), Stdout: stdout})
	if err != nil {
		fmt.Fprintf(std.Err, "artagent: warning: --events: %s (no events emitted)\n", oneLine(err))
		return nil, func() {}
	}
	// Run as an artq task, the worker names the task and the event that
	// started this run: the agent's events join its chain.
	corr, cause := os.Getenv("ART_CORRELATION"), os.Getenv("ART_CAUSATION")
	return func(ev *agent.Event) {
		d := draft(subject, ev)
		d.Correlation, d.Causation = corr, cause
		// Detached: a cancelled run's result is still recorded.
		em.Emit(context.WithoutCancel(ctx), d)
	}, func() { em.Close() }
}
