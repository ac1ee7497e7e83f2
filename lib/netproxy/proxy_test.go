package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// scene is a proxy under test and what it may or may not reach: an
// allowed upstream on 127.0.0.1 (its address listed, as a test's servers
// must be), and a "host service" on another loopback port that nothing
// lists. Both count what reaches them, so every attack is judged from
// outside.
type scene struct {
	proxy    *Proxy
	addr     string // the proxy's listener
	up       *httptest.Server
	upPort   int
	upHits   atomic.Int64
	svcPort  int
	svcConns atomic.Int64
}

func newScene(t *testing.T, cfg Config, extra ...string) *scene {
	t.Helper()
	sc := &scene{}
	sc.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc.upHits.Add(1)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://other.test/secret", http.StatusFound)
		case "/big":
			w.Write(make([]byte, 1<<20))
		default:
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
		}
	}))
	t.Cleanup(sc.up.Close)
	sc.upPort = sc.up.Listener.Addr().(*net.TCPAddr).Port
	svc, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	go func() {
		for {
			c, err := svc.Accept()
			if err != nil {
				return
			}
			sc.svcConns.Add(1)
			c.Close()
		}
	}()
	sc.svcPort = svc.Addr().(*net.TCPAddr).Port
	hosts := map[string]string{
		"good.test":     "127.0.0.1",
		"rebind.test":   "127.0.0.1",
		"metadata.test": "169.254.169.254",
		"private.test":  "10.1.2.3",
		"a.example.com": "127.0.0.1",
	}
	cfg.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		a, ok := hosts[host]
		if !ok {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	rules := []string{"good.test:" + strconv.Itoa(sc.upPort), "127.0.0.1:" + strconv.Itoa(sc.upPort),
		"rebind.test:" + strconv.Itoa(sc.svcPort), "metadata.test:80", "private.test:443", "*.example.com"}
	cfg.Allow = mustRules(t, append(rules, extra...)...)
	sc.proxy = New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc.addr = l.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = sc.proxy.Serve(l) }()
	t.Cleanup(func() { sc.proxy.Close(); <-done })
	return sc
}

// send writes raw to the proxy and returns the status line and the rest.
func (sc *scene) send(t *testing.T, raw string) (status string, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", sc.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", c, br
	}
	return strings.TrimSpace(line), c, br
}

func (sc *scene) refusals() []string {
	var out []string
	for _, r := range sc.proxy.Report().Refused {
		out = append(out, r.Reason)
	}
	return out
}

func TestConnectAllowed(t *testing.T) {
	sc := newScene(t, Config{})
	hp := "good.test:" + strconv.Itoa(sc.upPort)
	status, c, br := sc.send(t, "CONNECT "+hp+" HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
	if status != "HTTP/1.1 200 Connection established" {
		t.Fatalf("status %q", status)
	}
	if _, err := br.ReadString('\n'); err != nil { // the empty line
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hp)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "GET /hello 0" {
		t.Fatalf("body %q", body)
	}
	c.Close()
	sc.proxy.Close()
	rep := sc.proxy.Report()
	if len(rep.Allowed) != 1 || rep.Allowed[0].Host != "good.test" || rep.Allowed[0].BytesIn == 0 || rep.Allowed[0].BytesOut == 0 {
		t.Fatalf("report %+v", rep)
	}
}

// TestAttacksRefused runs each attack on the proxy and checks, from the
// targets' own counters, that nothing reached them, and that the refusal
// is recorded with its one-line reason.
func TestAttacksRefused(t *testing.T) {
	sc := newScene(t, Config{})
	up, svc := strconv.Itoa(sc.upPort), strconv.Itoa(sc.svcPort)
	for _, tc := range []struct {
		name, raw, status, reason string
	}{
		{"name not listed", "CONNECT example.org:443 HTTP/1.1\r\n\r\n", "403", "example.org:443 is not in the allowlist"},
		{"IPv4 literal not listed", "CONNECT 127.0.0.1:" + svc + " HTTP/1.1\r\n\r\n", "403", "is an address, not a name in the allowlist"},
		{"IPv6 literal not listed", "CONNECT [::1]:" + svc + " HTTP/1.1\r\n\r\n", "403", "is an address, not a name in the allowlist"},
		{"inet_aton form", "CONNECT 127.1:" + svc + " HTTP/1.1\r\n\r\n", "403", "is not a host name"},
		{"IPv4-mapped IPv6 literal", "CONNECT [::ffff:127.0.0.1]:" + svc + " HTTP/1.1\r\n\r\n", "403", "is an address"},
		{"listed name, other port", "CONNECT good.test:" + svc + " HTTP/1.1\r\n\r\n", "403", "is not in the allowlist"},
		{"CONNECT host differs from Host", "CONNECT good.test:" + up + " HTTP/1.1\r\nHost: evil.test:" + up + "\r\n\r\n", "400", "differs from the request target"},
		{"suffix look-alike", "CONNECT evil-example.com:443 HTTP/1.1\r\n\r\n", "403", "evil-example.com:443 is not in the allowlist"},
		{"rebinding to loopback", "CONNECT rebind.test:" + svc + " HTTP/1.1\r\n\r\n", "403", "resolves to 127.0.0.1, a loopback address"},
		{"rebinding to metadata", "CONNECT metadata.test:80 HTTP/1.1\r\n\r\n", "403", "169.254.169.254, a link-local address"},
		{"rebinding to private", "CONNECT private.test:443 HTTP/1.1\r\n\r\n", "403", "10.1.2.3, a private address"},
		{"host loopback by forward", "GET http://127.0.0.1:" + svc + "/ HTTP/1.1\r\nHost: 127.0.0.1:" + svc + "\r\n\r\n", "403", "is an address"},
		{"CL and TE", "POST http://good.test:" + up + "/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400", "ambiguous"},
		{"two CL", "POST http://good.test:" + up + "/ HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd", "400", "more than one Content-Length"},
		{"TE not chunked", "POST http://good.test:" + up + "/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "400", "Transfer-Encoding"},
		{"folded header", "GET http://good.test:" + up + "/ HTTP/1.1\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", "400", "folded"},
		{"origin form", "GET / HTTP/1.1\r\nHost: good.test:" + up + "\r\n\r\n", "400", "absolute http:// URLs only"},
		{"forward Host differs", "GET http://good.test:" + up + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", "400", "differs from the request target"},
		{"two Host", "GET http://good.test:" + up + "/ HTTP/1.1\r\nHost: good.test:" + up + "\r\nHost: evil.test\r\n\r\n", "400", "more than one Host"},
		{"space before colon", "GET http://good.test:" + up + "/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n", "400", "malformed header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, _ := sc.send(t, tc.raw)
			if !strings.Contains(status, " "+tc.status+" ") {
				t.Errorf("status %q; want %s", status, tc.status)
			}
			found := false
			for _, r := range sc.refusals() {
				found = found || strings.Contains(r, tc.reason)
			}
			if !found {
				t.Errorf("no refusal mentioning %q in %q", tc.reason, sc.refusals())
			}
		})
	}
	if n := sc.svcConns.Load(); n != 0 {
		t.Errorf("the host's loopback service saw %d connections", n)
	}
	if n := sc.upHits.Load(); n != 0 {
		t.Errorf("the upstream saw %d requests from refused attacks", n)
	}
}

// TestForwardNoRedirectNoSmuggle: a redirect is relayed, never followed;
// a second request pipelined behind the first (or hidden after a body)
// is never forwarded.
func TestForwardNoRedirectNoSmuggle(t *testing.T) {
	sc := newScene(t, Config{})
	hp := "good.test:" + strconv.Itoa(sc.upPort)
	status, _, _ := sc.send(t, "GET http://"+hp+"/redirect HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
	if !strings.Contains(status, "302") {
		t.Fatalf("status %q; want the 302 relayed", status)
	}
	smuggled := "POST http://" + hp + "/a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" +
		"GET http://" + hp + "/smuggled HTTP/1.1\r\n\r\n"
	status, _, br := sc.send(t, smuggled)
	if !strings.Contains(status, "200") {
		t.Fatalf("status %q", status)
	}
	rest, _ := io.ReadAll(br)
	if strings.Contains(string(rest), "smuggled") {
		t.Fatalf("the pipelined request was forwarded: %q", rest)
	}
	if n := sc.upHits.Load(); n != 2 {
		t.Errorf("upstream saw %d requests; want 2 (the redirect and the POST)", n)
	}
	// Chunked bodies are re-framed, not passed through.
	status, _, br = sc.send(t, "POST http://"+hp+"/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	rest, _ = io.ReadAll(br)
	if !strings.Contains(status, "200") || !strings.Contains(string(rest), "POST /c 3") {
		t.Fatalf("chunked POST: %q %q", status, rest)
	}
}

func TestConnectionLimit(t *testing.T) {
	sc := newScene(t, Config{MaxConnections: 3})
	hp := "good.test:" + strconv.Itoa(sc.upPort)
	var ok, refused int
	for range 5 {
		status, c, _ := sc.send(t, "CONNECT "+hp+" HTTP/1.1\r\n\r\n")
		switch {
		case strings.Contains(status, " 200 "):
			ok++
		case strings.Contains(status, " 429 "):
			refused++
		}
		c.Close()
	}
	if ok != 3 || refused != 2 {
		t.Fatalf("%d allowed, %d refused; want 3 and 2", ok, refused)
	}
	if r := sc.refusals(); len(r) != 1 || !strings.Contains(r[0], "connection limit 3") {
		t.Fatalf("refusals %q", r)
	}
}

func TestByteLimit(t *testing.T) {
	sc := newScene(t, Config{MaxBytes: 64 << 10})
	hp := "good.test:" + strconv.Itoa(sc.upPort)
	status, c, br := sc.send(t, "CONNECT "+hp+" HTTP/1.1\r\n\r\n")
	if !strings.Contains(status, "200") {
		t.Fatal(status)
	}
	br.ReadString('\n')
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: %s\r\n\r\n", hp)
	n, _ := io.Copy(io.Discard, br)
	if n >= 1<<20 {
		t.Fatalf("read %d bytes through a 64 KiB budget", n)
	}
	c.Close()
	sc.proxy.Close()
	rep := sc.proxy.Report()
	if len(rep.Allowed) != 1 || rep.Allowed[0].BytesIn+rep.Allowed[0].BytesOut > 64<<10 {
		t.Fatalf("report %+v", rep)
	}
	if r := sc.refusals(); len(r) != 1 || !strings.Contains(r[0], "byte limit") {
		t.Fatalf("refusals %q", r)
	}
}

func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.b:443 HTTP/1.1\r\nHost: a.b:443\r\n\r\n",
		"GET http://a.b/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		"POST http://a.b/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := readHead(bufio.NewReader(strings.NewReader(s)))
		if err != nil {
			return
		}
		if h.port < 1 || h.port > 65535 || h.host == "" {
			t.Fatalf("accepted %q with destination %q:%d", s, h.host, h.port)
		}
		if h.length >= 0 && h.chunked {
			t.Fatalf("accepted %q with both a length and chunked", s)
		}
		if !h.connect && h.url == nil {
			t.Fatalf("accepted %q without a URL", s)
		}
	})
}
