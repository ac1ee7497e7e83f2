package execx

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/art-runtime/art/lib/execx/internal/nethook"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/netproxy/account"
)

// NetworkMode is how much of the network a task reaches. From the widest
// to the narrowest: host, allow, loopback, none; a narrowing may only move
// right.
type NetworkMode string

// Network modes (docs/artexec.md: Network).
const (
	// NetworkHost: the host's network namespace. Under landlock and
	// strict, Landlock's TCP rule is lifted; seccomp still refuses UDP,
	// raw and netlink sockets.
	NetworkHost NetworkMode = "host"
	// NetworkAllow: NetworkLoopback plus egress to the listed
	// destinations only, through the runner's proxy (package netproxy).
	NetworkAllow NetworkMode = "allow"
	// NetworkLoopback: a network namespace of the task's own with only
	// lo up: the task's servers and clients reach each other on
	// 127.0.0.1 and ::1, nothing else is reachable.
	NetworkLoopback NetworkMode = "loopback"
	// NetworkNone: no TCP at all (Landlock, ABI >= 4) and, under strict,
	// a network namespace whose lo is down. The default of landlock.
	NetworkNone NetworkMode = "none"
)

// NetworkModes lists every mode from the widest to the narrowest, for
// flags, schemas and the narrowing order.
var NetworkModes = []NetworkMode{NetworkHost, NetworkAllow, NetworkLoopback, NetworkNone}

// ProxyPort is where a task under network allow finds the proxy: on
// 127.0.0.1 of its own network namespace, a listener its supervisor made
// and handed to the runner (no other namespace has it).
const ProxyPort = 3128

// Per-task bounds of the proxy when the policy sets none.
const (
	DefaultMaxConnections = 1024
	DefaultMaxNetBytes    = 4 << 30
)

// NetworkPolicy is the policy's network field.
type NetworkPolicy struct {
	// Mode empty means the backend's default: host under none, none
	// under landlock, loopback under strict.
	Mode NetworkMode `json:"mode,omitempty"`
	// Allow lists the destinations of mode allow: HOST[:PORT] (port 443
	// when none is given), *.SUFFIX[:PORT] for every name beneath SUFFIX,
	// an IPv4 or [IPv6] address to allow that address.
	Allow []string `json:"allow,omitempty"`
	// MaxConnections and MaxBytes bound what one task may open and move
	// through the proxy (both directions); 0 means the default.
	MaxConnections int   `json:"max_connections,omitempty"`
	MaxBytes       int64 `json:"max_bytes,omitempty"`
}

// networkRank orders modes: a lower rank is wider.
func networkRank(m NetworkMode) int { return slices.Index(NetworkModes, m) }

// defaultNetwork is the mode backend b runs with when the policy names
// none.
func defaultNetwork(b Isolation) NetworkMode {
	switch b {
	case IsolationStrict:
		return NetworkLoopback
	case IsolationLandlock, IsolationSeatbelt:
		return NetworkNone
	}
	return NetworkHost
}

// NetworkMode is the mode p's tasks run with: the policy's, or its
// backend's default.
func (p *Policy) NetworkMode() NetworkMode {
	if p.Network.Mode != "" {
		return p.Network.Mode
	}
	return defaultNetwork(p.Isolation)
}

func (n *NetworkPolicy) validate() error {
	if n.Mode != "" && networkRank(n.Mode) < 0 {
		return jsonx.Errorf("policy.network.mode", "unknown mode %q (want host, allow, loopback or none)", n.Mode)
	}
	for i, s := range n.Allow {
		if err := CheckNetworkRule(s); err != nil {
			return jsonx.Errorf(fmt.Sprintf("policy.network.allow[%d]", i), "%v", err)
		}
	}
	if len(n.Allow) > 0 && n.Mode != NetworkAllow {
		return jsonx.Errorf("policy.network.allow", "destinations are listed but the mode is %q, not allow", n.Mode)
	}
	if n.MaxConnections < 0 {
		return jsonx.Errorf("policy.network.max_connections", "must not be negative, got %d", n.MaxConnections)
	}
	if n.MaxBytes < 0 {
		return jsonx.Errorf("policy.network.max_bytes", "must not be negative, got %d", n.MaxBytes)
	}
	return nil
}

// ErrNoProxy: network allow is asked for, but this program does not link
// its implementation (package lib/execx/netallow). Nothing has started.
var ErrNoProxy = errors.New("network allow is not linked into this program (import github.com/art-runtime/art/lib/execx/netallow)")

// netAllow is network allow's implementation, or ErrNoProxy.
func netAllow() (*nethook.Impl, error) {
	if impl := nethook.Get(); impl != nil {
		return impl, nil
	}
	return nil, ErrNoProxy
}

// CheckNetworkRule reports why s is not a network allow destination
// (HOST[:PORT], *.SUFFIX[:PORT], an IPv4 or [IPv6] address), or nil; it
// is ErrNoProxy where network allow is not linked.
func CheckNetworkRule(s string) error {
	impl, err := netAllow()
	if err != nil {
		return err
	}
	return impl.Check(s)
}

// narrowNetwork applies a narrowing's network fields to q (a copy of p,
// whose isolation may already have been made stronger): the mode is
// pinned to p's own (a stronger backend must not bring a wider default)
// or to a narrower one, and hosts may only be taken from p's allowlist.
func narrowNetwork(p, q *Policy, mode NetworkMode, hosts []string) error {
	cur := p.NetworkMode()
	q.Network.Mode = cur
	q.Network.Allow = slices.Clone(p.Network.Allow)
	if mode != "" && mode != cur {
		if networkRank(mode) < 0 {
			return exitcode.Field(exitcode.Usage, "Network", string(mode), "unknown network mode (want host, allow, loopback or none)")
		}
		if networkRank(mode) < networkRank(cur) {
			return exitcode.Field(exitcode.Refused, "Network", string(mode), "would widen the policy's network %s", cur).Because(ErrWidens)
		}
		q.Network.Mode = mode
		if mode != NetworkAllow {
			q.Network.Allow = nil
		}
	}
	if hosts == nil {
		return nil
	}
	if q.Network.Mode != NetworkAllow {
		return exitcode.Field(exitcode.Usage, "AllowHost", strings.Join(hosts, ","), "destinations need network allow, not %s", q.Network.Mode)
	}
	impl, err := netAllow()
	if err != nil {
		return exitcode.Field(exitcode.Internal, "AllowHost", strings.Join(hosts, ","), "%v", err).Because(err)
	}
	var allow []string
	for _, h := range hosts {
		if err := impl.Check(h); err != nil {
			return exitcode.Field(exitcode.Usage, "AllowHost", h, "%v", err)
		}
		if !impl.Covered(h, p.Network.Allow) {
			return exitcode.Field(exitcode.Refused, "AllowHost", h, "not in the policy's network allowlist").Because(ErrWidens)
		}
		allow = append(allow, h)
	}
	q.Network.Allow = allow
	return nil
}

// NetworkReport is a Result's network: the mode the run had and, under
// network allow, what its proxy let through (per destination, with the
// bytes each way) and refused (with the reason, one line). Each list is
// bounded (account.MaxEntries); the omitted counts say how many
// destinations were only counted.
type NetworkReport struct {
	Mode           NetworkMode       `json:"mode"`
	Allowed        []account.Allowed `json:"allowed,omitempty"`
	Refused        []account.Refused `json:"refused,omitempty"`
	AllowedOmitted int               `json:"allowed_omitted,omitempty"`
	RefusedOmitted int               `json:"refused_omitted,omitempty"`
}

// proxyEnv is what a task under network allow is told about its proxy:
// the names curl, git, the go command, pip and npm read, in both cases.
func proxyEnv() map[string]string {
	url := fmt.Sprintf("http://127.0.0.1:%d", ProxyPort)
	env := map[string]string{}
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env[k], env[strings.ToLower(k)] = url, url
	}
	env["NO_PROXY"], env["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	return env
}

// netProxy is a run's side of network allow: what its proxy enforces,
// and the proxy once the supervisor handed over the listener.
type netProxy struct {
	netImpl *nethook.Impl
	netCfg  nethook.Config
	proxy   nethook.Proxy
	rep     *account.Report // the accounting, once stopped
}

// prepare takes the proxy's configuration from the policy and the
// caller's hooks, and returns env with the proxy's variables; ErrNoProxy
// where network allow is not linked (before anything started).
func (np *netProxy) prepare(p *Policy, opt *Options, env []string) ([]string, error) {
	impl, err := netAllow()
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "%w", err)
	}
	n := &p.Network
	np.netImpl = impl
	np.netCfg = nethook.Config{Allow: n.Allow, MaxConnections: n.MaxConnections, MaxBytes: n.MaxBytes,
		Resolve: opt.Resolve, OnDecision: opt.OnNetwork}
	if np.netCfg.MaxConnections == 0 {
		np.netCfg.MaxConnections = DefaultMaxConnections
	}
	if np.netCfg.MaxBytes == 0 {
		np.netCfg.MaxBytes = DefaultMaxNetBytes
	}
	add := proxyEnv()
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := add[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range sortedKeys(add) {
		out = append(out, k+"="+add[k])
	}
	slices.Sort(out)
	return out, nil
}

// startProxy serves the task's connections on l (the listening socket in
// its network namespace, which the proxy takes over) until the run ends.
func (np *netProxy) startProxy(l *os.File) error {
	px, err := np.netImpl.Start(l, np.netCfg)
	if err != nil {
		return exitcode.Errorf(exitcode.Internal, "network allow: listener: %w", err)
	}
	np.proxy = px
	return nil
}

// stopProxy ends every connection of the proxy, waits for it and keeps
// its accounting for report.
func (np *netProxy) stopProxy() {
	if np.proxy == nil {
		return
	}
	rep := np.proxy.Stop()
	np.proxy, np.rep = nil, &rep
}

// report stops the proxy (the task is gone) and copies its accounting
// into r.
func (np *netProxy) report(r *NetworkReport) {
	np.stopProxy()
	if np.rep == nil || r == nil {
		return
	}
	r.Allowed, r.Refused = np.rep.Allowed, np.rep.Refused
	r.AllowedOmitted, r.RefusedOmitted = np.rep.AllowedOmitted, np.rep.RefusedOmitted
}
