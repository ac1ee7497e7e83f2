package netproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// MaxHeadBytes bounds a request's line and headers.
const MaxHeadBytes = 64 << 10

// head is one request's line and headers, parsed strictly: whatever two
// HTTP parsers could read differently (the root of request smuggling) is
// refused, not interpreted.
type head struct {
	connect bool
	method  string
	url     *url.URL // plain-HTTP forwarding: the absolute request target
	host    string   // destination as the task named it
	port    int
	header  []field // in order, names canonical
	length  int64   // Content-Length, -1 when absent
	chunked bool    // Transfer-Encoding: chunked
}

type field struct{ name, value string }

// headError is a request refused before any connection: msg is the
// reason, host and port what is known of the destination.
type headError struct {
	host string
	port int
	msg  string
}

func (e *headError) Error() string { return e.msg }

// readHead reads and checks one request head from br. An I/O error (the
// task hung up) is returned as is; a malformed or ambiguous request as a
// *headError.
func readHead(br *bufio.Reader) (*head, error) {
	var lines [][]byte
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if total > MaxHeadBytes || errors.Is(err, bufio.ErrBufferFull) {
			return nil, &headError{msg: fmt.Sprintf("request head over %d bytes", MaxHeadBytes)}
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if len(lines) == 0 { // tolerated before the request line only
				continue
			}
			break
		}
		lines = append(lines, bytes.Clone(line))
	}
	return parseHead(lines)
}

// parseHead checks the request line and the header fields.
func parseHead(lines [][]byte) (*head, error) {
	h := &head{length: -1}
	method, rest, ok1 := strings.Cut(string(lines[0]), " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !validToken(method) || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || target == "" {
		return nil, &headError{msg: "malformed request line"}
	}
	h.method = method
	if err := h.parseTarget(target); err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return &headError{host: h.host, port: h.port, msg: fmt.Sprintf(format, a...)}
	}
	var hostHdr []string
	var lengths, encodings []string
	for _, l := range lines[1:] {
		if l[0] == ' ' || l[0] == '\t' {
			return nil, bad("folded header line (ambiguous request)")
		}
		name, value, ok := strings.Cut(string(l), ":")
		if !ok || !validToken(name) {
			return nil, bad("malformed header line")
		}
		value = strings.Trim(value, " \t")
		if strings.ContainsAny(value, "\x00\r\n") {
			return nil, bad("control byte in header %s", name)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch canon {
		case "Host":
			hostHdr = append(hostHdr, value)
		case "Content-Length":
			lengths = append(lengths, value)
		case "Transfer-Encoding":
			encodings = append(encodings, value)
		}
		h.header = append(h.header, field{canon, value})
	}
	if len(hostHdr) > 1 {
		return nil, bad("more than one Host header (ambiguous request)")
	}
	if len(hostHdr) == 1 && !sameAuthority(hostHdr[0], h.host, h.port, h.connect) {
		return nil, bad("the Host header %q differs from the request target %s", hostHdr[0], net.JoinHostPort(h.host, strconv.Itoa(h.port)))
	}
	switch {
	case len(lengths) > 0 && len(encodings) > 0:
		return nil, bad("both Content-Length and Transfer-Encoding (ambiguous request)")
	case len(lengths) > 1:
		return nil, bad("more than one Content-Length (ambiguous request)")
	case len(encodings) > 1 || len(encodings) == 1 && !strings.EqualFold(encodings[0], "chunked"):
		return nil, bad("Transfer-Encoding other than a single chunked (ambiguous request)")
	case len(lengths) == 1:
		n, err := strconv.ParseInt(lengths[0], 10, 64)
		if err != nil || n < 0 || lengths[0][0] == '+' {
			return nil, bad("Content-Length %q is not a number", lengths[0])
		}
		h.length = n
	case len(encodings) == 1:
		h.chunked = true
	}
	if h.connect && (h.length > 0 || h.chunked) {
		return nil, bad("a CONNECT request with a body")
	}
	return h, nil
}

// parseTarget reads the request target: an authority for CONNECT, an
// absolute http:// URL otherwise.
func (h *head) parseTarget(target string) error {
	if h.method == "CONNECT" {
		h.connect = true
		host, port, err := net.SplitHostPort(target)
		if err != nil || host == "" {
			return &headError{msg: fmt.Sprintf("CONNECT target %q is not HOST:PORT", target)}
		}
		p, err := portOr(port, 0, target)
		if err != nil || port == "" {
			return &headError{msg: fmt.Sprintf("CONNECT target %q has no valid port", target)}
		}
		h.host, h.port = strings.ToLower(host), p
		return nil
	}
	u, err := url.Parse(target)
	switch {
	case err != nil:
		return &headError{msg: fmt.Sprintf("request target %q is not a URL", target)}
	case u.Scheme == "https":
		return &headError{msg: "https:// is reached through CONNECT, not forwarded"}
	case u.Scheme != "http" || u.Host == "" || !strings.HasPrefix(target, "http://"):
		return &headError{msg: "the proxy forwards absolute http:// URLs only (use CONNECT for anything else)"}
	case u.User != nil:
		return &headError{msg: "credentials in the request target"}
	}
	host, port := u.Hostname(), 80
	if ps := u.Port(); ps != "" {
		p, err := portOr(ps, 80, target)
		if err != nil {
			return &headError{msg: err.Error()}
		}
		port = p
	}
	h.url, h.host, h.port = u, strings.ToLower(host), port
	return nil
}

// sameAuthority reports whether a Host header names host:port (a
// missing port is 80, or for CONNECT must be given).
func sameAuthority(hdr, host string, port int, connect bool) bool {
	hh, hp := hdr, ""
	if strings.HasPrefix(hdr, "[") || strings.Count(hdr, ":") == 1 {
		var err error
		if hh, hp, err = net.SplitHostPort(hdr); err != nil {
			return false
		}
	}
	p := 80
	if hp != "" {
		n, err := strconv.Atoi(hp)
		if err != nil {
			return false
		}
		p = n
	} else if connect {
		p = port // "Host: example.com" for CONNECT example.com:443
	}
	return strings.EqualFold(strings.TrimSuffix(hh, "."), strings.TrimSuffix(host, ".")) && p == port
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
