package netproxy

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "proxy.golang.org", want: "proxy.golang.org:443"},
		{in: "Proxy.Golang.ORG.:8080", want: "proxy.golang.org:8080"},
		{in: "*.example.com", want: "*.example.com:443"},
		{in: "127.0.0.1:80", want: "127.0.0.1:80"},
		{in: "[::1]:8443", want: "[::1]:8443"},
		{in: "[::1]", want: "[::1]:443"},
		{in: "::1", err: "brackets"},
		{in: "", err: "empty"},
		{in: "host:0", err: "port"},
		{in: "host:65536", err: "port"},
		{in: "host:+80", err: "port"},
		{in: "host:", err: "empty port"},
		{in: "*.com", err: "two labels"},
		{in: "a b.com", err: "not a host name"},
		{in: "*.*.example.com", err: "not a host name"},
		{in: "exa\x00mple.com", err: "not a host name"},
		{in: "[fe80::1%eth0]:443", err: "zone"},
		{in: "0.0.0.0.", err: "numeric"},
		{in: "127.1", err: "numeric"},
		{in: "0x7f.1:80", err: "numeric"},
	} {
		r, err := ParseRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRule(%q) = %v, %v; want an error mentioning %q", tc.in, r, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("ParseRule(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
}

// TestRuleMatch holds the suffix rule to whole labels: *.example.com
// admits a.example.com, never evil-example.com or example.com itself.
func TestRuleMatch(t *testing.T) {
	rules := mustRules(t, "*.example.com", "golang.org", "10.0.0.1:8080")
	for _, tc := range []struct {
		name string
		port int
		want bool
	}{
		{"a.example.com", 443, true},
		{"a.b.example.com", 443, true},
		{"example.com", 443, false},
		{"evil-example.com", 443, false},
		{"a.example.com.evil.org", 443, false},
		{"a.example.com", 80, false},
		{"golang.org", 443, true},
		{"golang.org", 8443, false},
		{"sub.golang.org", 443, false},
	} {
		got := false
		for _, r := range rules {
			got = got || r.matchName(tc.name, tc.port)
		}
		if got != tc.want {
			t.Errorf("%s:%d allowed = %v; want %v", tc.name, tc.port, got, tc.want)
		}
	}
}

func TestCovered(t *testing.T) {
	policy := mustRules(t, "*.example.com", "golang.org", "10.0.0.1:8080")
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"a.example.com", true},
		{"*.a.example.com", true},
		{"*.example.com", true},
		{"example.com", false},
		{"golang.org", true},
		{"golang.org:80", false},
		{"*.golang.org", false},
		{"10.0.0.1:8080", true},
		{"10.0.0.1", false},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Covered(r, policy); got != tc.want {
			t.Errorf("Covered(%s) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func mustRules(t testing.TB, in ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, s := range in {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"a.b", "*.a.b:1", "[::1]:2", "1.2.3.4", "x:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		// What a rule prints parses back to the same rule.
		r2, err := ParseRule(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRule(%q) = %v; its string parses to %v, %v", s, r, r2, err)
		}
	})
}
