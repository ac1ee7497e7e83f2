//go:build linux

package execx

import "testing"

// A task's private TMPDIR made and removed (no pool: makeTmpdir, mkdir
// under the temp directory, the path resolved, opened) against one kept
// by a pool, emptied and checked (see keptTmp), in $TMPDIR or /tmp. A new
// one costs what the temp directory's filesystem makes it cost: on ext4
// with many directories made and removed in a row the inode allocator
// scans past recently deleted inodes.
//
//	go test -run NONE -bench Tmpdir ./lib/execx
func BenchmarkTmpdir(b *testing.B) {
	b.Run("new", func(b *testing.B) {
		cpu0 := cpuNS()
		for b.Loop() {
			ip := isoPlan{}
			var err error
			if ip.tmpdir, ip.tmp, err = makeTmpdir(); err != nil {
				b.Fatal(err)
			}
			ip.closeTmpdir()
			ip.tmp.Close()
		}
		b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("kept", func(b *testing.B) {
		pool := NewPool(1)
		defer pool.Close()
		cpu0 := cpuNS()
		for b.Loop() {
			ip := isoPlan{tmpPool: pool, tmpClean: true}
			var err error
			if ip.tmpdir, ip.tmp, err = pool.tmpdir(); err != nil {
				b.Fatal(err)
			}
			ip.closeTmpdir()
		}
		b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
		if len(pool.tmps) != 1 {
			b.Fatalf("%d temp dirs kept; want 1", len(pool.tmps))
		}
	})
}
