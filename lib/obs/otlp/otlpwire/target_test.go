package otlpwire

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
		ok         bool
	}{
		{"otlphttp://127.0.0.1:4318", "127.0.0.1:4318", true},
		{"otlphttp://localhost:1", "localhost:1", true},
		{"otlphttp://[::1]:4318", "[::1]:4318", true},
		{"otlphttp://127.0.0.1", "", false},
		{"otlphttp://127.0.0.1:0", "", false},
		{"otlphttp://127.0.0.1:65536", "", false},
		{"otlphttp://127.0.0.1:04318", "", false},
		{"otlphttp://:4318", "", false},
		{"otlphttp://h:4318/v1/logs", "", false},
		{"otlphttp://u:p@h:4318", "", false},
		{"otlp://h:4318", "", false},
		{"http://h:4318", "", false},
	} {
		got, err := ParseTarget(tc.spec)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q (ok %v)", tc.spec, got, err, tc.want, tc.ok)
		}
		if err != nil && (exitcode.Of(err) != exitcode.Usage || !errors.Is(err, ErrTarget)) {
			t.Errorf("ParseTarget(%q): %v; want a usage error wrapping ErrTarget", tc.spec, err)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	f.Add("otlphttp://127.0.0.1:4318")
	f.Add("otlphttp://[::1]:1")
	f.Fuzz(func(t *testing.T, spec string) {
		hp, err := ParseTarget(spec)
		if err != nil {
			return
		}
		if Scheme+hp != spec || strings.ContainsAny(hp, "/@?# ") {
			t.Fatalf("ParseTarget(%q) = %q: accepted more than HOST:PORT", spec, hp)
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			t.Fatalf("ParseTarget(%q) = %q: not HOST:PORT: %v", spec, hp, err)
		}
	})
}
