// Command netbench is the Go half of scripts/bench-network.sh: a loopback
// HTTP server to download from (serve), and the per-connection cost of
// art's proxy against a direct connection, measured interleaved in one
// process (conn).
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/netproxy"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netbench serve BYTES | conn N")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2])
	case "conn":
		err = conn(os.Args[2])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		os.Exit(1)
	}
}

// handler serves /big (size bytes) and /small (2 bytes).
func handler(size int64) http.Handler {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 'a' + byte(i%26)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; {
			n := min(left, int64(len(buf)))
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			left -= n
		}
	})
}

// serve prints the port of a server of /big and /small and serves until
// killed.
func serve(sizeArg string) error {
	size, err := strconv.ParseInt(sizeArg, 10, 64)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	return http.Serve(l, handler(size))
}

// conn measures n direct and n proxied connections, interleaved, each
// one small HTTP request on a new connection (the proxied one through a
// CONNECT to art's proxy), and prints the median of each and the
// difference, in microseconds.
func conn(nArg string) error {
	n, err := strconv.Atoi(nArg)
	if err != nil {
		return err
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(sl, handler(0))
	target := sl.Addr().String()
	rule, err := netproxy.ParseRule(target)
	if err != nil {
		return err
	}
	px := netproxy.New(netproxy.Config{Allow: []netproxy.Rule{rule}})
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go px.Serve(pl)
	defer px.Close()
	get := func(c net.Conn, br *bufio.Reader) error {
		if _, err := fmt.Fprintf(c, "GET /small HTTP/1.1\r\nHost: %s\r\n\r\n", target); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	direct := func() error {
		c, err := net.Dial("tcp", target)
		if err != nil {
			return err
		}
		defer c.Close()
		return get(c, bufio.NewReader(c))
	}
	proxied := func() error {
		c, err := net.Dial("tcp", pl.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("proxy: %s", resp.Status)
		}
		return get(c, br)
	}
	var d, p []time.Duration
	for range n {
		for _, f := range []struct {
			run func() error
			out *[]time.Duration
		}{{direct, &d}, {proxied, &p}} {
			t0 := time.Now()
			if err := f.run(); err != nil {
				return err
			}
			*f.out = append(*f.out, time.Since(t0))
		}
	}
	med := func(v []time.Duration) time.Duration { slices.Sort(v); return v[len(v)/2] }
	md, mp := med(d), med(p)
	fmt.Printf("direct_us %d\nproxied_us %d\nextra_us %d\n", md.Microseconds(), mp.Microseconds(), (mp - md).Microseconds())
	return nil
}
