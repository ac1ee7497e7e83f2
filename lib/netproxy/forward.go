package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
)

// hopByHop are the headers of one connection, never passed on.
var hopByHop = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authorization": true,
	"Proxy-Authenticate": true, "Te": true, "Trailer": true, "Upgrade": true, "Host": true,
}

// forward sends one plain-HTTP request to up in origin form, with the
// body framed as it was checked (Content-Length or re-chunked), and
// relays the one response as the server sent it, byte for byte, until the
// server closes (the request says Connection: close, and the task's
// connection is closed after it, so no second message can follow on
// either side). A redirect is relayed like any response: the proxy never
// follows it. The proxy parses no response, so the runner links no HTTP
// client or server.
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
				drop[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(tok))] = true
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
		err = copyChunked(w, br)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		writeStatus(c, 502, fmt.Sprintf("%s: sending the request: %v", a.Host, err))
		return
	}
	n, err := io.Copy(c, cu)
	if n == 0 && !errors.Is(err, errBudget) {
		why := "the server closed the connection without a response"
		if err != nil {
			why = err.Error()
		}
		writeStatus(c, 502, fmt.Sprintf("%s: reading the response: %s", a.Host, why))
	}
}

// maxChunkLine bounds a chunk's size line (its extensions included).
const maxChunkLine = 4 << 10

// copyChunked copies a chunked body from br to w, re-chunked: each chunk's
// size read strictly (hex digits, extensions dropped), its data, its
// CRLF; the last chunk's trailers are dropped. Anything else is an error,
// so what reaches the server ends exactly where the proxy says the body
// ends.
func copyChunked(w *bufio.Writer, br *bufio.Reader) error {
	for {
		line, err := readChunkLine(br)
		if err != nil {
			return err
		}
		if i := strings.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, " \t")
		if line == "" || len(line) > 15 || strings.TrimLeft(line, "0123456789abcdefABCDEF") != "" {
			return fmt.Errorf("bad chunk size %q", line)
		}
		size, err := strconv.ParseInt(line, 16, 64)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers, up to the empty line
				t, err := readChunkLine(br)
				if err != nil {
					return err
				}
				if t == "" {
					break
				}
			}
			_, err := io.WriteString(w, "0\r\n\r\n")
			return err
		}
		fmt.Fprintf(w, "%x\r\n", size)
		if _, err := io.CopyN(w, br, size); err != nil {
			return err
		}
		if end, err := readChunkLine(br); err != nil || end != "" {
			return errors.New("chunk data not followed by CRLF")
		}
		io.WriteString(w, "\r\n")
	}
}

// readChunkLine reads one CRLF-ended line of a chunked body, without its
// CRLF; a bare LF or a line over maxChunkLine is an error.
func readChunkLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxChunkLine {
			return "", errors.New("chunk line too long")
		}
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return "", err
		}
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", errors.New("chunk line not ended by CRLF")
	}
	return string(b[:len(b)-2]), nil
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
