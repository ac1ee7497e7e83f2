// Package netallow links network allow into a program that runs tasks
// with lib/execx: the allowlist's grammar and the egress proxy (package
// netproxy). Import it for its side effect:
//
//	import _ "github.com/art-runtime/art/lib/execx/netallow"
//
// The task-running libraries (the queue's worker, the agent) and
// artexec-cli import it. lib/execx does not, so that the artexec
// binary's plain run links no networking code: without this package a
// policy or a narrowing that lists network allow destinations is refused
// (execx.ErrNoProxy) before anything starts, and artexec hands such a
// run to artexec-cli (docs/artexec.md, "Two binaries").
package netallow

import (
	"context"
	"net"
	"net/netip"
	"os"

	"github.com/art-runtime/art/lib/execx/internal/nethook"
	"github.com/art-runtime/art/lib/netproxy"
	"github.com/art-runtime/art/lib/netproxy/account"
)

func init() {
	nethook.Set(&nethook.Impl{Check: check, Covered: covered, Start: start})
}

func check(rule string) error {
	_, err := netproxy.ParseRule(rule)
	return err
}

// rules parses allow, each entry already checked.
func rules(allow []string) []netproxy.Rule {
	out := make([]netproxy.Rule, 0, len(allow))
	for _, s := range allow {
		r, _ := netproxy.ParseRule(s)
		out = append(out, r)
	}
	return out
}

func covered(rule string, allow []string) bool {
	r, err := netproxy.ParseRule(rule)
	return err == nil && netproxy.Covered(r, rules(allow))
}

// proxy is a serving netproxy.Proxy and the end of its Serve.
type proxy struct {
	p    *netproxy.Proxy
	done chan struct{}
}

func start(f *os.File, cfg nethook.Config) (nethook.Proxy, error) {
	l, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	pc := netproxy.Config{Allow: rules(cfg.Allow), MaxConnections: cfg.MaxConnections, MaxBytes: cfg.MaxBytes,
		OnDecision: cfg.OnDecision}
	if cfg.Resolve != nil {
		pc.Resolve = textResolver(cfg.Resolve)
	}
	px := &proxy{p: netproxy.New(pc), done: make(chan struct{})}
	go func() {
		defer close(px.done)
		_ = px.p.Serve(l)
	}()
	return px, nil
}

func (px *proxy) Stop() account.Report {
	px.p.Close()
	<-px.done
	return px.p.Report()
}

// textResolver adapts a resolver of addresses in text form; an address
// it cannot parse fails the lookup.
func textResolver(resolve func(context.Context, string) ([]string, error)) func(context.Context, string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		texts, err := resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		out := make([]netip.Addr, 0, len(texts))
		for _, t := range texts {
			a, err := netip.ParseAddr(t)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	}
}
