package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
)

// hopByHop are the headers of one connection, never passed on.
var hopByHop = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authorization": true,
	"Proxy-Authenticate": true, "Te": true, "Trailer": true, "Upgrade": true, "Host": true,
}

// forward sends one plain-HTTP request to up in origin form, with the
// body framed as it was checked (Content-Length or re-chunked), and
// relays the one response. A redirect is relayed like any response: the
// proxy never follows it.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, up net.Conn, h *head, a *Allowed) {
	cu := &countConn{Conn: up, p: p}
	defer func() {
		p.count(a, cu.out, cu.in)
		if cu.exhausted {
			p.refuse(a.Host, a.Port, fmt.Sprintf("the task's byte limit %d is reached", p.cfg.MaxBytes))
		}
	}()
	drop := map[string]bool{}
	for _, f := range h.header {
		if f.name == "Connection" {
			for tok := range strings.SplitSeq(f.value, ",") {
				drop[http.CanonicalHeaderKey(strings.TrimSpace(tok))] = true
			}
		}
	}
	w := bufio.NewWriter(cu)
	fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\n", h.method, h.url.RequestURI(), h.url.Host)
	for _, f := range h.header {
		if !hopByHop[f.name] && !drop[f.name] {
			fmt.Fprintf(w, "%s: %s\r\n", f.name, f.value)
		}
	}
	io.WriteString(w, "Connection: close\r\n\r\n")
	var err error
	switch {
	case h.length > 0:
		_, err = io.CopyN(w, br, h.length)
	case h.chunked:
		cw := httputil.NewChunkedWriter(w)
		if _, err = io.Copy(cw, httputil.NewChunkedReader(br)); err == nil {
			err = cw.Close()
			io.WriteString(w, "\r\n")
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		writeStatus(c, 502, fmt.Sprintf("%s: sending the request: %v", a.Host, err))
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(cu), &http.Request{Method: h.method})
	if err != nil {
		if !errors.Is(err, errBudget) {
			writeStatus(c, 502, fmt.Sprintf("%s: reading the response: %v", a.Host, err))
		}
		return
	}
	defer resp.Body.Close()
	resp.Close = true
	_ = resp.Write(c)
}

var errBudget = errors.New("byte limit reached")

// countConn counts the bytes of a forwarded request and response against
// the task's budget.
type countConn struct {
	net.Conn
	p         *Proxy
	out, in   int64
	exhausted bool
}

func (c *countConn) Write(b []byte) (int, error) {
	if n := c.p.reserve(int64(len(b))); n < int64(len(b)) {
		c.p.release(n)
		c.exhausted = true
		return 0, errBudget
	}
	n, err := c.Conn.Write(b)
	c.out += int64(n)
	c.p.release(int64(len(b) - n))
	return n, err
}

func (c *countConn) Read(b []byte) (int, error) {
	want := c.p.reserve(int64(len(b)))
	if want == 0 {
		c.exhausted = true
		return 0, errBudget
	}
	n, err := c.Conn.Read(b[:want])
	c.in += int64(n)
	c.p.release(want - int64(n))
	return n, err
}
