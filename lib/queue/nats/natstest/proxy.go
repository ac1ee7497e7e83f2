package natstest

import (
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a server that can freeze: while frozen
// it forwards no byte in either direction but keeps every connection open,
// as a network partition does (no reset, no FIN: the peers only see
// silence).
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewProxy listens on a loopback port and forwards to the server at url
// (nats://HOST:PORT). It is closed when the test ends.
func NewProxy(tb testing.TB, url string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: strings.TrimPrefix(url, "nats://")}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL is the proxy's nats:// URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Freeze stops all traffic, keeping the connections open.
func (p *Proxy) Freeze() { p.set(true) }

// Thaw lets traffic through again.
func (p *Proxy) Thaw() { p.set(false) }

func (p *Proxy) set(frozen bool) {
	p.mu.Lock()
	p.frozen = frozen
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close ends the proxy and every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cond.Broadcast()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies src to dst, holding each chunk while the proxy is frozen.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen && !p.closed {
				p.cond.Wait()
			}
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
