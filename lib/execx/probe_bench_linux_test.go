//go:build linux

package execx

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkNofileProbe is what learning the caller's soft open-files limit
// costs (probeNofile: the shim started stopped by ptrace at its execve,
// read and killed), paid once per runner process when Go raised the
// limit. The soft limit is set one below the hard one first, so the probe
// runs. go test -run NONE -bench NofileProbe ./lib/execx
func BenchmarkNofileProbe(b *testing.B) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil || old.Max < 2 {
		b.Skip("no open-files limit to lower")
	}
	lim := unix.Rlimit{Cur: old.Max - 1, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		b.Skip(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	cpu0 := cpuNS()
	for b.Loop() {
		probeNofile()
	}
	b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
}
