//go:build linux

package shim

import (
	"testing"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/execx/stage/filters"
)

// Decoding a pooled landlock task's spec, as a serving supervisor does
// for every task (the compiled seccomp filter is most of it):
//
//	go test -run NONE -bench DecodeSpec ./lib/execx/shim
func BenchmarkDecodeSpec(b *testing.B) {
	progs, err := filters.Programs(stage.SeccompLandlock, false)
	if err != nil {
		b.Fatal(err)
	}
	tmp := "/tmp/artq-tmp-1234567890"
	s := &Spec{
		Stage: stage.Spec{
			Path: "/usr/bin/true", Argv: []string{"true"},
			Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "TMPDIR=" + tmp, "LANG=C.UTF-8"},
			Rlimits: []stage.Rlimit{{Name: "core", Resource: 4, Value: 0}}, NNP: true, DropCaps: true,
			Landlock: 6, RW: []string{"/srv/ws", tmp}, Filters: progs,
		},
		StageView: &stage.View{ReadOnly: true, RW: []string{"/srv/ws", tmp}, Cwd: "/srv/ws"},
		Supervise: true, RWTrees: 2, Cgroup: true,
	}
	enc := s.Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeSpec(enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(enc)), "spec-bytes")
}
