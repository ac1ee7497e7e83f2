package openai

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
)

// transient marks a failure worth retrying when retries are enabled.
type transient struct {
	err        *provider.Error
	retryAfter time.Duration // from the server's Retry-After; 0: none
}

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// retryableStatus: rate limited (429) or a gateway or server saying it is
// briefly unavailable (502, 503, 504). Every other 4xx is the request's
// fault and fails the same way again; a 500 is not known to be transient.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// resetOrRefused: the connection was refused (a server restarting) or
// reset or closed before any reply arrived. Failures after a reply started
// are not retried: its tokens were spent, and streamed text already shown.
func resetOrRefused(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date;
// 0 when absent or unparsable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > 3600 {
			n = 3600
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// maxBackoff caps the computed backoff (not a server's Retry-After, which
// is honoured as given if the provider timeout allows it).
const maxBackoff = 8 * time.Second

// backoff is the wait before retry number attempt (1-based): the server's
// Retry-After when it sent one, else Backoff doubled per attempt, capped
// at maxBackoff. No jitter: one agent is one client.
func (p *Provider) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := p.cfg.Backoff
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	if d > maxBackoff {
		d = maxBackoff
	}
	return d
}
