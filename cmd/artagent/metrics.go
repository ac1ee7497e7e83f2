package main

import (
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/agentmetrics"
	"github.com/art-runtime/art/lib/obs/promserve"
)

// serveMetrics listens on addr (none: no metrics) before any work, so a
// bad or busy address fails first, and serves the run's metrics there
// until stop. observe counts an event (nil without --metrics).
func serveMetrics(std cli.IO, addr string, opt agentmetrics.Options) (observe func(*agent.Event), stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	ln, err := promserve.Listen(addr)
	if err != nil {
		return nil, nil, err
	}
	m := agentmetrics.New(opt)
	stop = promserve.Serve(ln, m.Handler(), func(err error) { fmt.Fprintf(std.Err, "artagent: warning: --metrics: %v\n", err) })
	return m.Observe, stop, nil
}

// observeAll calls each non-nil observer in turn (nil when there is none).
func observeAll(fs ...func(*agent.Event)) func(*agent.Event) {
	var set []func(*agent.Event)
	for _, f := range fs {
		if f != nil {
			set = append(set, f)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return func(ev *agent.Event) {
		for _, f := range set {
			f(ev)
		}
	}
}
