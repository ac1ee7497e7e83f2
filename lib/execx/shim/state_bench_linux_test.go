//go:build linux

package shim

import (
	"runtime"
	"testing"
)

// The state check a pooled supervisor makes after every task.
// go test -run NONE -bench InheritedState ./lib/execx/shim
func BenchmarkInheritedState(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newStateReader()
	want := r.read()
	for b.Loop() {
		if st := r.read(); !st.same(&want) {
			b.Fatal("state changed")
		}
	}
}
