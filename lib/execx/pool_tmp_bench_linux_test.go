//go:build linux

package execx

import "testing"

// A task's private TMPDIR made and removed (no pool) against one kept by
// a pool, emptied and checked (see keptTmp), in $TMPDIR or /tmp.
//
//	go test -run NONE -bench Tmpdir ./lib/execx
func BenchmarkTmpdir(b *testing.B) {
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			ip := isoPlan{}
			var err error
			if ip.tmpdir, ip.tmp, err = makeTmpdir(); err != nil {
				b.Fatal(err)
			}
			ip.closeTmpdir()
			ip.tmp.Close()
		}
	})
	b.Run("kept", func(b *testing.B) {
		pool := NewPool(1)
		defer pool.Close()
		for b.Loop() {
			ip := isoPlan{tmpPool: pool, tmpClean: true}
			var err error
			if ip.tmpdir, ip.tmp, err = pool.tmpdir(); err != nil {
				b.Fatal(err)
			}
			ip.closeTmpdir()
		}
		if len(pool.tmps) != 1 {
			b.Fatalf("%d temp dirs kept; want 1", len(pool.tmps))
		}
	})
}
