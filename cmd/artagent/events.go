package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/agenttrace"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/otlp"
	"github.com/art-runtime/art/lib/obs/tracectx"
)

// eventObserver opens the --events sinks (else $ART_EVENTS; stdout is the
// sink "stdout" writes to; nil refuses that sink) and returns what sends
// each AgentEvent to them as subject, and what closes them. A sink that
// cannot open is a warning: events are never worth failing the work for.
// With an otlphttp:// sink the run is also a trace (lib/agent/agenttrace),
// continuing an incoming TRACEPARENT: run as an artq task, the agent's run
// is a child of the task's run span.
func eventObserver(ctx context.Context, std cli.IO, sinks []string, stdout io.Writer, subject string) (func(*agent.Event), func()) {
	if len(sinks) == 0 {
		sinks = strings.Fields(os.Getenv(cli.EnvEvents))
	}
	if len(sinks) == 0 {
		return nil, func() {}
	}
	warn := obs.WarnTo("artagent", std.Err)
	remote := &otlp.Remote{Options: otlp.Options{Service: "artagent", Version: cli.Version(), Warn: warn, Find: clibase.Companion}}
	em, err := obs.Open(sinks, obs.Options{Warn: warn, Stdout: stdout, Remote: remote.Open})
	if err != nil {
		fmt.Fprintf(std.Err, "artagent: warning: --events: %s (no events emitted)\n", oneLine(err))
		return nil, func() {}
	}
	var run *agenttrace.Run
	if remote.Exporter != nil {
		run = agenttrace.Start(tracectx.FromEnv(context.WithoutCancel(ctx), os.Getenv), remote.Exporter.Tracer(),
			attribute.String("artagent.subject", subject))
	}
	// Run as an artq task, the worker names the task and the event that
	// started this run: the agent's events join its chain.
	corr, cause := os.Getenv("ART_CORRELATION"), os.Getenv("ART_CAUSATION")
	return func(ev *agent.Event) {
			d := draft(subject, ev)
			d.Correlation, d.Causation = corr, cause
			// Detached: a cancelled run's result is still recorded.
			em.Emit(context.WithoutCancel(ctx), d)
			if run != nil {
				run.Observe(ev)
			}
		}, func() {
			if run != nil {
				run.End()
			}
			em.Close()
		}
}
