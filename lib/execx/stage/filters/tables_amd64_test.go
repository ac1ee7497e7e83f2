//go:build linux && amd64

package filters

import (
	"bytes"
	"testing"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/execx/stage/filters/internal/compile"
)

// The generated tables are exactly what go-seccomp-bpf and the guard
// assembler compile today: a change to package compile without `go
// generate` fails here.
func TestTablesMatchCompile(t *testing.T) {
	for _, profile := range []string{stage.SeccompLandlock, stage.SeccompStrict} {
		for _, denyUnix := range []bool{false, true} {
			want, err := compile.Compile(profile, denyUnix)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Programs(profile, denyUnix)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s denyUnix=%v: %d programs, compiled %d", profile, denyUnix, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("%s denyUnix=%v: program %d differs from a fresh compilation: run go generate in lib/execx/stage/filters", profile, denyUnix, i)
				}
			}
		}
	}
	if _, err := Programs("loose", false); err == nil {
		t.Error("an unknown profile was given programs")
	}
}
