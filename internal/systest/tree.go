package systest

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tree describes every entry under dir, one line each, in lexical order:
// its path, type, permission bits, and for a regular file its size and
// SHA-256, for a symlink its target. Two equal Trees mean nothing under dir
// was added, removed, renamed, rewritten or chmodded (times are left out:
// a read may change them). A missing dir gives "".
func Tree(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && os.IsNotExist(err) {
				return filepath.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %d sha256:%x", len(data), sha256.Sum256(data))
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return b.String()
}

// SameTree fails the test when dir no longer matches before (a Tree of it).
func SameTree(t testing.TB, what, dir, before string) {
	t.Helper()
	if after := Tree(t, dir); after != before {
		t.Errorf("%s changed %s:\nbefore:\n%s\nafter:\n%s", what, dir, before, after)
	}
}
