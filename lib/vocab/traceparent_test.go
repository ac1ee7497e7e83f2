package vocab

import (
	"strings"
	"testing"
)

func TestValidTraceparent(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"", false},
	} {
		if got := ValidTraceparent(tc.s); got != tc.ok {
			t.Errorf("ValidTraceparent(%q) = %v; want %v", tc.s, got, tc.ok)
		}
	}
}

func FuzzValidTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidTraceparent(s) {
			return
		}
		parts := strings.Split(s, "-")
		if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 || strings.ToLower(s) != s {
			t.Fatalf("accepted %q", s)
		}
	})
}
