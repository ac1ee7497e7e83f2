//go:build linux

package stage

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The Landlock ruleset a pooled supervisor makes for every landlock task
// (it restricts nothing until the task's process enforces it):
//
//	go test -run NONE -bench LandlockRuleset ./lib/execx/stage
func BenchmarkLandlockRuleset(b *testing.B) {
	abi := LandlockABI()
	if abi == 0 {
		b.Skip("no Landlock")
	}
	dir := b.TempDir()
	held, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(held)
	for b.Loop() {
		fd, err := landlockRuleset(abi, []string{dir}, []int{held}, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
