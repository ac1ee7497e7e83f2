//go:build linux

package stage

import (
	"strings"
	"testing"
)

// A malformed program is refused before anything is installed (the
// calling thread stays unfiltered: nothing reached seccomp(2)).
func TestLoadSeccompMalformed(t *testing.T) {
	for _, c := range []struct {
		name string
		prog []byte
	}{
		{"empty", nil},
		{"partial instruction", make([]byte, 12)},
		{"too long", make([]byte, 8*0x10000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := LoadSeccomp([][]byte{c.prog})
			if err == nil || !strings.Contains(err.Error(), "is no BPF program") {
				t.Errorf("LoadSeccomp(%d bytes) = %v, want a refusal", len(c.prog), err)
			}
		})
	}
}
