package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/art-runtime/art/lib/netproxy/account"
)

// Config is one task's proxy.
type Config struct {
	Allow []Rule
	// MaxConnections bounds the connections the task may open to the
	// proxy; MaxBytes the bytes it may move through it, both directions
	// of every connection together. Zero means no bound.
	MaxConnections int
	MaxBytes       int64
	// Resolve resolves a name the allowlist admitted; nil means the
	// system resolver. Tests point listed names at their own servers
	// here (never at a public address).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// OnDecision, if set, is called for every decision, from the
	// connection's goroutine.
	OnDecision func(Decision)
	// HeaderTimeout bounds reading a request's head (default 30s);
	// DialTimeout a connection to the destination (default 30s).
	HeaderTimeout, DialTimeout time.Duration
}

// The accounting's types live in package account, which links no
// networking code: a runner reports them without linking the proxy.
type (
	Decision = account.Decision
	Allowed  = account.Allowed
	Refused  = account.Refused
	Report   = account.Report
)

// MaxEntries bounds each list of a Report.
const MaxEntries = account.MaxEntries

// Proxy serves one task.
type Proxy struct {
	cfg   Config
	local map[netip.Addr]bool // this host's own interface addresses

	conns  atomic.Int64 // connections accepted
	budget atomic.Int64 // bytes left (MaxBytes > 0)

	mu       sync.Mutex
	allowed  map[string]*Allowed
	refused  map[string]*Refused
	order    []string // keys of allowed then refused, first seen first
	omitA    int
	omitR    int
	live     map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
	listener net.Listener
}

// New makes a proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 30 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	p := &Proxy{cfg: cfg, allowed: map[string]*Allowed{}, refused: map[string]*Refused{},
		live: map[net.Conn]struct{}{}, local: localAddrs()}
	p.budget.Store(cfg.MaxBytes)
	return p
}

// localAddrs are the addresses of this host's interfaces: a name that
// resolves to one of them leads to the host's own services.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out[pfx.Addr().Unmap()] = true
		}
	}
	return out
}

// Serve accepts the task's connections on l until l fails or Close.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	p.listener = l
	p.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// Close stops accepting, ends every connection and waits for them.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	if p.listener != nil {
		p.listener.Close()
	}
	for c := range p.live {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.live[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.live, c)
	p.mu.Unlock()
}

// Report is a copy of the accounting so far, in the order destinations
// were first seen.
func (p *Proxy) Report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{Allowed: []Allowed{}, Refused: []Refused{}, AllowedOmitted: p.omitA, RefusedOmitted: p.omitR}
	for _, k := range p.order {
		if a, ok := p.allowed[k]; ok {
			r.Allowed = append(r.Allowed, *a)
		} else if f, ok := p.refused[k]; ok {
			r.Refused = append(r.Refused, *f)
		}
	}
	return r
}

// clip bounds what the task named (up to a whole request head) to the
// length of a DNS name.
func clip(s string) string {
	if len(s) > 253 {
		return s[:253] + "..."
	}
	return s
}

// refuse records a refusal and tells the decision hook.
func (p *Proxy) refuse(host string, port int, reason string) {
	host, reason = clip(host), clip(reason)
	p.mu.Lock()
	k := "r\x00" + host + "\x00" + strconv.Itoa(port) + "\x00" + reason
	switch f, ok := p.refused[k]; {
	case ok:
		f.Count++
	case len(p.refused) >= MaxEntries:
		p.omitR++
	default:
		p.refused[k] = &Refused{Host: host, Port: port, Reason: reason, Count: 1}
		p.order = append(p.order, k)
	}
	p.mu.Unlock()
	if p.cfg.OnDecision != nil {
		p.cfg.OnDecision(Decision{Host: host, Port: port, Reason: reason})
	}
}

// admit records an allowed connection and returns its counters (nil
// once MaxEntries destinations are kept: then it is only counted).
func (p *Proxy) admit(host string, port int) *Allowed {
	p.mu.Lock()
	k := "a\x00" + host + "\x00" + strconv.Itoa(port)
	a, ok := p.allowed[k]
	switch {
	case ok:
	case len(p.allowed) >= MaxEntries:
		p.omitA++
		a = &Allowed{Host: host, Port: port} // counted nowhere
	default:
		a = &Allowed{Host: host, Port: port}
		p.allowed[k] = a
		p.order = append(p.order, k)
	}
	a.Connections++
	p.mu.Unlock()
	if p.cfg.OnDecision != nil {
		p.cfg.OnDecision(Decision{Host: host, Port: port, Allowed: true})
	}
	return a
}

func (p *Proxy) count(a *Allowed, out, in int64) {
	p.mu.Lock()
	a.BytesOut += out
	a.BytesIn += in
	p.mu.Unlock()
}

// dest is a destination the proxy decided to connect to.
type dest struct {
	host  string // as the task named it (normalised)
	port  int
	addrs []netip.Addr
}

// check decides whether the task may connect to host:port, resolving a
// name itself. A refusal's reason is one line naming the destination.
func (p *Proxy) check(ctx context.Context, host string, port int) (dest, string) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if !p.listedAddr(a, port) {
			return dest{}, hp + " is an address, not a name in the allowlist"
		}
		return dest{host: a.String(), port: port, addrs: []netip.Addr{a}}, ""
	}
	name, err := normName(host)
	if err != nil {
		return dest{}, fmt.Sprintf("%q is not a host name", clip(host))
	}
	hp = net.JoinHostPort(name, strconv.Itoa(port))
	listed := false
	for _, r := range p.cfg.Allow {
		if r.matchName(name, port) {
			listed = true
			break
		}
	}
	if !listed {
		return dest{}, hp + " is not in the allowlist"
	}
	resolve := p.cfg.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, err := resolve(rctx, name)
	if err != nil || len(addrs) == 0 {
		return dest{}, fmt.Sprintf("%s: the name does not resolve", hp)
	}
	d := dest{host: name, port: port}
	var why string
	for _, a := range addrs {
		a = a.Unmap()
		if kind := p.special(a); kind != "" && !p.listedAddr(a, port) {
			why = fmt.Sprintf("%s resolves to %s, %s not in the allowlist", hp, a, kind)
			continue
		}
		d.addrs = append(d.addrs, a)
	}
	if len(d.addrs) == 0 {
		return dest{}, why
	}
	return d, ""
}

func (p *Proxy) listedAddr(a netip.Addr, port int) bool {
	for _, r := range p.cfg.Allow {
		if r.matchAddr(a, port) {
			return true
		}
	}
	return false
}

var specialPrefixes = []struct {
	pfx  netip.Prefix
	kind string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a protocol assignment address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
}

// special names the kind of address a that a name must not lead to
// unless the address itself is listed, or "".
func (p *Proxy) special(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsPrivate():
		return "a private address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case p.local[a]:
		return "an address of this host"
	}
	for _, s := range specialPrefixes {
		if s.pfx.Contains(a) {
			return s.kind
		}
	}
	return ""
}

// dial connects to d, trying its addresses in order.
func (p *Proxy) dial(ctx context.Context, d dest) (*net.TCPConn, error) {
	dl := net.Dialer{Timeout: p.cfg.DialTimeout}
	var last error
	for _, a := range d.addrs {
		c, err := dl.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(d.port)).String())
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		last = err
	}
	return nil, last
}

// connLimit refuses the connection beyond MaxConnections; it reports
// whether it did.
func (p *Proxy) overLimit() bool {
	n := p.conns.Add(1)
	return p.cfg.MaxConnections > 0 && n > int64(p.cfg.MaxConnections)
}

// chunk is how many bytes one copy reserves from the byte budget at a
// time: large enough for splice to run at full speed.
const chunk = 1 << 20

// reserve takes up to n bytes from the budget (all of n without one).
func (p *Proxy) reserve(n int64) int64 {
	if p.cfg.MaxBytes <= 0 {
		return n
	}
	for {
		left := p.budget.Load()
		if left <= 0 {
			return 0
		}
		take := min(n, left)
		if p.budget.CompareAndSwap(left, left-take) {
			return take
		}
	}
}

func (p *Proxy) release(n int64) {
	if p.cfg.MaxBytes > 0 && n > 0 {
		p.budget.Add(n)
	}
}

// pipe copies src to dst within the byte budget and returns the bytes
// copied and whether the budget ran out. Both ends being TCP
// connections, the copy is a splice: the bytes never enter this process.
func (p *Proxy) pipe(dst io.Writer, src io.Reader) (total int64, exhausted bool) {
	for {
		n := p.reserve(chunk)
		if n == 0 {
			return total, true
		}
		c, err := io.Copy(dst, &io.LimitedReader{R: src, N: n})
		total += c
		p.release(n - c)
		if err != nil || c < n {
			return total, false
		}
	}
}

// handle serves one connection of the task: one request, then the
// connection ends (a second request on it is never read, let alone
// forwarded).
func (p *Proxy) handle(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	if p.overLimit() {
		// Read the head anyway, to name the destination refused.
		_ = c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
		h, err := readHead(br)
		host, port := "", 0
		if err == nil {
			host, port = h.host, h.port
		}
		reason := fmt.Sprintf("the task's connection limit %d is reached", p.cfg.MaxConnections)
		p.refuse(host, port, reason)
		writeStatus(c, 429, reason)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	h, err := readHead(br)
	if err != nil {
		var he *headError
		if errors.As(err, &he) {
			p.refuse(he.host, he.port, he.msg)
			writeStatus(c, 400, he.msg)
		}
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	ctx := context.Background()
	d, why := p.check(ctx, h.host, h.port)
	if why != "" {
		p.refuse(h.host, h.port, why)
		writeStatus(c, 403, why)
		return
	}
	up, err := p.dial(ctx, d)
	if err != nil {
		why := fmt.Sprintf("%s: cannot connect: %v", net.JoinHostPort(d.host, strconv.Itoa(d.port)), errors.Unwrap(err))
		p.refuse(d.host, d.port, why)
		writeStatus(c, 502, why)
		return
	}
	defer up.Close()
	a := p.admit(d.host, d.port)
	if h.connect {
		p.tunnel(c, br, up, a)
	} else {
		p.forward(c, br, up, h, a)
	}
}

// tunnel answers a CONNECT and copies both ways until both are done.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, up *net.TCPConn, a *Allowed) {
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var out int64
	if n := br.Buffered(); n > 0 { // the client spoke first (a TLS hello)
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
		out += int64(n)
		_, _ = br.Discard(n)
	}
	var in int64
	var exIn, exOut bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		in, exIn = p.pipe(c, up)
		closeWrite(c)
	}()
	n, exOut2 := p.pipe(up, c)
	exOut = exOut2
	out += n
	closeWrite(up)
	if exOut { // the budget ran out: end the download too
		c.Close()
		up.Close()
	}
	<-done
	if exIn {
		c.Close()
	}
	p.count(a, out, in)
	if exIn || exOut {
		p.refuse(a.Host, a.Port, fmt.Sprintf("the task's byte limit %d is reached", p.cfg.MaxBytes))
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	c.Close()
}

// writeStatus answers with an error status whose body is the reason.
func writeStatus(w io.Writer, code int, reason string) {
	text := map[int]string{400: "Bad Request", 403: "Forbidden", 429: "Too Many Requests", 502: "Bad Gateway"}[code]
	body := "art proxy: " + reason + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, text, len(body), body)
}
