package otlpwire

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// Scheme starts an OTLP/HTTP sink spec: otlphttp://HOST:PORT.
const Scheme = "otlphttp://"

// ErrTarget: a sink spec that is not otlphttp://HOST:PORT.
var ErrTarget = errors.New("want otlphttp://HOST:PORT (OTLP over HTTP, protobuf; no path, no credentials)")

// ParseTarget checks an otlphttp://HOST:PORT spec and returns HOST:PORT.
func ParseTarget(spec string) (string, error) {
	hp, ok := strings.CutPrefix(spec, Scheme)
	if !ok {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: %w", spec, ErrTarget))
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" || strings.ContainsAny(hp, "/?#@ \t\n") {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: %w", spec, ErrTarget))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", exitcode.Wrap(exitcode.Usage, fmt.Errorf("events: %q: port %q: %w", spec, port, ErrTarget))
	}
	return hp, nil
}
