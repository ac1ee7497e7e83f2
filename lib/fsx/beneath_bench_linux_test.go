package fsx

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkConfinedOpen is the cost of one confined open of a file two
// directories down (d007/f013.go of a 50×20-file tree, the shape of the
// workspace copy benchmark), by the mechanism OpenBeneath uses (os.Root:
// one openat per component, symlinks resolved in user space), by the peer
// it replaced (one openat2 RESOLVE_BENEATH, resolved by the kernel), and
// unconfined (os.Open) as the floor:
//
//	go test -run '^$' -bench ConfinedOpen -count 5 ./lib/fsx/
func BenchmarkConfinedOpen(b *testing.B) {
	root := b.TempDir()
	for d := range 50 {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte("package p\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	const rel = "d007/f013.go"
	b.Run("OpenBeneath", func(b *testing.B) {
		for b.Loop() {
			f, err := OpenBeneath(root, rel, os.O_RDONLY)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("os.Root-open", func(b *testing.B) {
		// A caller holding the root open (the workspace copy does): the
		// per-file cost without OpenRoot's own open.
		r, err := os.OpenRoot(root)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			f, err := r.OpenFile(rel, os.O_RDONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("openat2-peer", func(b *testing.B) {
		for b.Loop() {
			dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
			})
			unix.Close(dirfd)
			if err != nil {
				b.Skipf("openat2: %v", err)
			}
			unix.Close(fd)
		}
	})
	b.Run("os.Open-unconfined", func(b *testing.B) {
		p := filepath.Join(root, rel)
		for b.Loop() {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
