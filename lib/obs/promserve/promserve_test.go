package promserve

import (
	"errors"
	"net"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{":9464", "127.0.0.1:9464"},
		{"127.0.0.1:9464", "127.0.0.1:9464"},
		{"0.0.0.0:9464", "0.0.0.0:9464"},
		{"[::1]:0", "[::1]:0"},
		{"localhost:1", "localhost:1"},
		{"9464", ""},
		{"nonsense", ""},
		{":http", ""},
		{":65536", ""},
		{":-1", ""},
		{":+1", ""},
		{":09464", ""},
	} {
		got, err := Addr(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("Addr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if err != nil && (exitcode.Of(err) != exitcode.Usage || !errors.Is(err, ErrAddr)) {
			t.Errorf("Addr(%q): %v; want a usage error wrapping ErrAddr", tc.in, err)
		}
	}
}

func FuzzAddr(f *testing.F) {
	f.Add(":9464")
	f.Add("127.0.0.1:1")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Addr(s)
		if err != nil {
			return
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			t.Fatalf("Addr(%q) = %q: not HOST:PORT with a host", s, a)
		}
	})
}
