// Package promserve is the one home of the --metrics flag's serving: the
// listen address ([HOST]:PORT, loopback unless a host is named), the
// listener opened before any work (so a bad or busy address fails first,
// with its exit code), and the HTTP server that exposes a Prometheus
// registry at /metrics. artq work and artagent run/mcp use it alike.
package promserve

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// ErrAddr: a --metrics address that is not [HOST]:PORT.
var ErrAddr = errors.New("want [HOST]:PORT (HOST defaults to 127.0.0.1)")

// Addr checks a metrics address and returns what to listen on: ":PORT"
// becomes 127.0.0.1:PORT, so metrics stay on the machine unless an
// address is named.
func Addr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", exitcode.Field(exitcode.Usage, "Metrics", addr, "%w", ErrAddr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || strconv.Itoa(n) != port {
		return "", exitcode.Field(exitcode.Usage, "Metrics", addr, "port %q: %w", port, ErrAddr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Listen listens on Addr(addr): a usage error for a bad address, an
// internal one (exit 125) for an address that cannot be listened on.
func Listen(addr string) (net.Listener, error) {
	a, err := Addr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		return nil, exitcode.Field(exitcode.Internal, "Metrics", addr, "%w", err)
	}
	return ln, nil
}

// Serve serves h at /metrics on ln until stop, which also closes ln.
// A serving failure goes to warn: metrics are never worth failing the
// work for.
func Serve(ln net.Listener, h http.Handler, warn func(error)) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			warn(err)
		}
	}()
	return func() { srv.Close() }
}
