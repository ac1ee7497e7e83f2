package workspace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/fsx"
)

// FuzzEditorPaths throws arbitrary paths and texts at Read and Replace over
// the fixture tree (with escaping symlinks) and checks the invariants: no
// panic, nothing outside the root ever read or changed, no file created, no
// temporary file left, and every refusal a typed error.
func FuzzEditorPaths(f *testing.F) {
	for _, s := range []string{
		"a.go", "sub/b.txt", "link-in", "link-abs", "link-rel", "link-dir/f",
		"../outside/secret", "/etc/passwd", "", ".", "./a.go", "sub//b.txt",
		"sub/./b.txt", "fifo", "new.go", "a.go/", "sub/", "link-dir/../a.go",
		"\x00", "sub\x00/b.txt", "..", "...", "link-dir/../../outside/secret",
	} {
		f.Add(s, "hello", "HELLO")
	}
	f.Fuzz(func(t *testing.T, rel, old, new string) {
		root, outside := fixture(t)
		e := newEditor(t, root, 1<<12)
		before := snapshot(t, root)

		data, err := e.Read(rel)
		if err == nil && bytes.Contains(data, []byte("SECRET")) {
			t.Fatalf("Read(%q) returned an outside file", rel)
		}
		checkTyped(t, "Read", rel, err)

		_, err = e.Replace(rel, old, new)
		checkTyped(t, "Replace", rel, err)

		for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(outside, "dir", "f")} {
			if got := readFile(t, p); got != "SECRET\n" {
				t.Fatalf("Replace(%q) changed outside file %s", rel, p)
			}
		}
		if ents, _ := os.ReadDir(filepath.Join(outside, "dir")); len(ents) != 1 {
			t.Fatalf("Replace(%q) created a file outside", rel)
		}
		after := snapshot(t, root)
		changed := 0
		for name := range after {
			if _, ok := before[name]; !ok {
				t.Fatalf("Replace(%q) created %s", rel, name)
			}
		}
		for name, content := range before {
			a, ok := after[name]
			if !ok {
				t.Fatalf("Replace(%q) removed %s", rel, name)
			}
			if a != content {
				changed++
			}
		}
		if err == nil && changed != 1 && old != new {
			t.Fatalf("Replace(%q) succeeded but changed %d files", rel, changed)
		}
		if err != nil && changed != 0 {
			t.Fatalf("Replace(%q) failed (%v) but changed %d files", rel, err, changed)
		}
	})
}

func checkTyped(t *testing.T, op, rel string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var we *Error
	if !errors.As(err, &we) {
		t.Fatalf("%s(%q) error %v is not a *workspace.Error", op, rel, err)
	}
	for _, known := range []error{fsx.ErrEscape, ErrNotRegular, ErrTooLarge, ErrSymlink, ErrNotExist, ErrEmptyOld, ErrNoMatch, ErrAmbiguous} {
		if errors.Is(err, known) {
			return
		}
	}
	// Names too long for the file system are the one I/O error a path alone
	// can cause.
	if strings.Contains(err.Error(), "file name too long") {
		return
	}
	t.Fatalf("%s(%q) error %v is not one of the refusals", op, rel, err)
}

// snapshot maps every path under root (symlinks not followed) to its content
// or link target.
func snapshot(t *testing.T, root string) map[string]string {
	m := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "-> " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			m[rel] = string(b)
		case d.IsDir():
			m[rel] = "dir"
		default:
			m[rel] = "special"
		}
		return nil
	})
	return m
}
