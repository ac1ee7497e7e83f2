package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchTree writes dirs directories of files files of size bytes each.
func benchTree(b *testing.B, root string, dirs, files, size int) {
	b.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWorkspaceCopy is the cost of a copy-mode workspace (copyTree,
// the whole of it) against `cp -a` of the same tree, the baseline a user
// would otherwise script: go test -run '^$' -bench WorkspaceCopy ./lib/queue/
func BenchmarkWorkspaceCopy(b *testing.B) {
	for _, c := range []struct {
		name               string
		dirs, files, bytes int
	}{
		{"small-3files", 1, 3, 300},
		{"tree-1000files-4KiB", 50, 20, 4 << 10},
	} {
		src := b.TempDir()
		benchTree(b, src, c.dirs, c.files, c.bytes)
		b.Run(c.name+"/copyTree", func(b *testing.B) {
			tmp := b.TempDir()
			srcRoot, err := os.OpenRoot(src)
			if err != nil {
				b.Fatal(err)
			}
			defer srcRoot.Close()
			for i := 0; b.Loop(); i++ {
				dst := filepath.Join(tmp, fmt.Sprint(i))
				if err := os.Mkdir(dst, 0o700); err != nil {
					b.Fatal(err)
				}
				dr, err := os.OpenRoot(dst)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := copyTree(context.Background(), srcRoot, dr); err != nil {
					b.Fatal(err)
				}
				dr.Close()
			}
		})
		b.Run(c.name+"/cp-a", func(b *testing.B) {
			tmp := b.TempDir()
			for i := 0; b.Loop(); i++ {
				if out, err := exec.Command("cp", "-a", src, filepath.Join(tmp, fmt.Sprint(i))).CombinedOutput(); err != nil {
					b.Fatalf("cp -a: %v: %s", err, out)
				}
			}
		})
	}
}
