package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// fixture builds:
//
//	outside/secret           "SECRET\n"     (outside the root)
//	outside/dir/f            "SECRET\n"
//	root/a.go                "package a\n\nfunc A() int { return 1 }\n"  0644
//	root/run.sh              "#!/bin/sh\necho hi\n"                        0755
//	root/sub/b.txt           "hello world\n"
//	root/link-in -> sub/b.txt                (inside)
//	root/link-abs -> outside/secret          (absolute, escapes)
//	root/link-rel -> ../outside/secret       (relative, escapes)
//	root/link-dir -> ../outside/dir          (directory, escapes)
//	root/fifo                                (named pipe)
func fixture(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(outside, "dir"), filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret"), "SECRET\n", 0o644)
	write(filepath.Join(outside, "dir", "f"), "SECRET\n", 0o644)
	write(filepath.Join(root, "a.go"), "package a\n\nfunc A() int { return 1 }\n", 0o644)
	write(filepath.Join(root, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	write(filepath.Join(root, "sub", "b.txt"), "hello world\n", 0o644)
	links := map[string]string{
		"link-in":  "sub/b.txt",
		"link-abs": filepath.Join(outside, "secret"),
		"link-rel": "../outside/secret",
		"link-dir": "../outside/dir",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func newEditor(t *testing.T, root string, max int64) *Editor {
	t.Helper()
	e, err := New(root, Options{MaxFileBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRead(t *testing.T) {
	root, _ := fixture(t)
	e := newEditor(t, root, 64)
	tests := []struct {
		path string
		want string // content, or "" when an error is expected
		is   error
		code int
		msg  string
	}{
		{path: "a.go", want: "package a\n\nfunc A() int { return 1 }\n"},
		{path: "./sub/../sub/b.txt", is: fsx.ErrEscape, code: exitcode.Refused, msg: "parent directory component"},
		{path: "sub/b.txt", want: "hello world\n"},
		{path: "link-in", want: "hello world\n"},
		{path: "/etc/passwd", is: fsx.ErrEscape, code: exitcode.Refused, msg: "absolute path"},
		{path: filepath.Join(root, "a.go"), is: fsx.ErrEscape, code: exitcode.Refused, msg: "absolute path"},
		{path: "../outside/secret", is: fsx.ErrEscape, code: exitcode.Refused, msg: "parent directory"},
		{path: "link-abs", is: fsx.ErrEscape, code: exitcode.Refused, msg: "outside the workspace"},
		{path: "link-rel", is: fsx.ErrEscape, code: exitcode.Refused, msg: "outside the workspace"},
		{path: "link-dir/f", is: fsx.ErrEscape, code: exitcode.Refused, msg: "outside the workspace"},
		{path: "", is: fsx.ErrEscape, code: exitcode.Refused, msg: "empty path"},
		{path: "missing.go", is: ErrNotExist, code: exitcode.NotFound, msg: "no such file"},
		{path: "a.go/x", is: ErrNotExist, code: exitcode.NotFound, msg: "not a directory"},
		{path: "sub", is: ErrNotRegular, code: exitcode.Refused, msg: "a directory"},
		{path: ".", is: ErrNotRegular, code: exitcode.Refused, msg: "a directory"},
		{path: "fifo", is: ErrNotRegular, code: exitcode.Refused, msg: "a named pipe"},
	}
	for _, tt := range tests {
		got, err := e.Read(tt.path)
		if tt.is == nil {
			if err != nil || string(got) != tt.want {
				t.Errorf("Read(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
			continue
		}
		if !errors.Is(err, tt.is) || exitcode.Of(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Read(%q) error = %v (code %d); want %v, code %d, containing %q", tt.path, err, exitcode.Of(err), tt.is, tt.code, tt.msg)
		}
		if strings.Contains(string(got), "SECRET") {
			t.Errorf("Read(%q) leaked an outside file", tt.path)
		}
	}
}

func TestReadTooLarge(t *testing.T) {
	root, _ := fixture(t)
	e := newEditor(t, root, 10)
	_, err := e.Read("a.go")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit 10") {
		t.Fatalf("Read of a 35-byte file with a 10-byte cap: %v; want ErrTooLarge naming the limit", err)
	}
}

func TestReplace(t *testing.T) {
	root, _ := fixture(t)
	e := newEditor(t, root, 1<<10)
	ed, err := e.Replace("a.go", "return 1", "return 2")
	if err != nil {
		t.Fatal(err)
	}
	want := "package a\n\nfunc A() int { return 2 }\n"
	if got := readFile(t, filepath.Join(root, "a.go")); got != want {
		t.Errorf("after edit a.go = %q; want %q", got, want)
	}
	if ed.Line != 3 || ed.Offset != 26 || ed.BytesBefore != 37 || ed.BytesAfter != 37 {
		t.Errorf("Edit = %+v; want line 3, offset 26, 37 → 37 bytes", ed)
	}
	// The mode of an executable survives the rename.
	if _, err := e.Replace("run.sh", "echo hi", "echo hello there"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode after edit = %v; want 0755", fi.Mode().Perm())
	}
	// Editing through a parent path that is a symlink to a directory inside
	// the root is allowed: the canonical target is inside.
	if err := os.Symlink("sub", filepath.Join(root, "subl")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Replace("subl/b.txt", "world", "there"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "sub", "b.txt")); got != "hello there\n" {
		t.Errorf("sub/b.txt = %q", got)
	}
	// Deleting text is an edit too.
	if _, err := e.Replace("sub/b.txt", " there", ""); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "sub", "b.txt")); got != "hello\n" {
		t.Errorf("sub/b.txt = %q", got)
	}
	noTempFiles(t, root)
}

func TestReplaceRefuses(t *testing.T) {
	root, outside := fixture(t)
	if err := os.WriteFile(filepath.Join(root, "dup.txt"), []byte("x = 1\nx = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "aaa.txt"), []byte("aaa"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEditor(t, root, 40)
	tests := []struct {
		name, path, old, new string
		is                   error
		code                 int
		msg                  string
	}{
		{"empty old", "a.go", "", "x", ErrEmptyOld, exitcode.Usage, "old text is empty"},
		{"no match", "a.go", "return 3", "x", ErrNoMatch, exitcode.Usage, "copy the text exactly"},
		{"whitespace differs", "a.go", "func  A()", "x", ErrNoMatch, exitcode.Usage, "whitespace were ignored"},
		{"ambiguous", "dup.txt", "x = 1", "x = 2", ErrAmbiguous, exitcode.Usage, "2 occurrences, on lines 1, 2"},
		{"overlapping", "aaa.txt", "aa", "b", ErrAmbiguous, exitcode.Usage, "2 occurrences, on line 1;"},
		{"new file", "new.go", "x", "y", ErrNotExist, exitcode.NotFound, "creating files is not allowed"},
		{"new file in new dir", "newdir/new.go", "x", "y", ErrNotExist, exitcode.NotFound, "creating files is not allowed"},
		{"absolute", filepath.Join(root, "a.go"), "return 1", "x", fsx.ErrEscape, exitcode.Refused, "absolute path"},
		{"dotdot", "sub/../a.go", "return 1", "x", fsx.ErrEscape, exitcode.Refused, "parent directory"},
		{"dotdot outside", "../outside/secret", "SECRET", "x", fsx.ErrEscape, exitcode.Refused, "parent directory"},
		{"symlink abs", "link-abs", "SECRET", "x", fsx.ErrEscape, exitcode.Refused, "outside the workspace"},
		{"symlink rel", "link-rel", "SECRET", "x", fsx.ErrEscape, exitcode.Refused, "outside the workspace"},
		{"symlink parent", "link-dir/f", "SECRET", "x", fsx.ErrEscape, exitcode.Refused, "outside the workspace"},
		{"symlink inside", "link-in", "hello", "x", ErrSymlink, exitcode.Refused, "it points to sub/b.txt"},
		{"directory", "sub", "x", "y", ErrNotRegular, exitcode.Refused, "a directory"},
		{"root", ".", "x", "y", ErrNotRegular, exitcode.Refused, "root is a directory"},
		{"fifo", "fifo", "x", "y", ErrNotRegular, exitcode.Refused, "a named pipe"},
		{"result too large", "a.go", "return 1", strings.Repeat("x", 12), ErrTooLarge, exitcode.Refused, "would be 41 bytes, limit 40"},
	}
	for _, tt := range tests {
		_, err := e.Replace(tt.path, tt.old, tt.new)
		if !errors.Is(err, tt.is) || exitcode.Of(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Replace(%q) error = %v (code %d); want %v, code %d, containing %q",
				tt.name, tt.path, err, exitcode.Of(err), tt.is, tt.code, tt.msg)
		}
	}
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(outside, "dir", "f")} {
		if got := readFile(t, p); got != "SECRET\n" {
			t.Errorf("outside file %s changed to %q", p, got)
		}
	}
	if got := readFile(t, filepath.Join(root, "dup.txt")); got != "x = 1\nx = 1\n" {
		t.Errorf("dup.txt changed by a refused edit: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(root, "link-in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link-in is no longer a symlink after a refused edit")
	}
	for _, p := range []string{"new.go", "newdir"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused edit", p)
		}
	}
	noTempFiles(t, root)
}

func TestReplaceTooLargeBefore(t *testing.T) {
	root, _ := fixture(t)
	e := newEditor(t, root, 20)
	if _, err := e.Replace("a.go", "return 1", "r"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "37 bytes, limit 20") {
		t.Fatalf("edit of a file over the cap: %v", err)
	}
}

// A write to the target between the read and the rename must not be lost
// silently: the edit is refused and the other writer's bytes stay.
func TestReplaceDetectsConcurrentChange(t *testing.T) {
	root, _ := fixture(t)
	e := newEditor(t, root, 1<<10)
	p := filepath.Join(root, "a.go")
	testHookBeforeRename = func() {
		if err := os.WriteFile(p, []byte("package a // someone else\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeRename = nil }()
	_, err := e.Replace("a.go", "return 1", "return 2")
	if !errors.Is(err, ErrChanged) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("edit racing a writer: %v; want ErrChanged", err)
	}
	if got := readFile(t, p); got != "package a // someone else\n" {
		t.Errorf("the other writer's content was overwritten: %q", got)
	}
	noTempFiles(t, root)

	// A file swapped in under the same name is refused as well.
	testHookBeforeRename = func() {
		tmp := filepath.Join(root, "swap")
		if err := os.WriteFile(tmp, []byte("return 1"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Error(err)
		}
	}
	if _, err := e.Replace("a.go", "someone", "x"); !errors.Is(err, ErrChanged) {
		t.Fatalf("edit after the target was swapped: %v; want ErrChanged", err)
	}
}

// A parent directory flipped between a real directory and a symlink to an
// outside directory, while edits run, must never let a write land outside.
func TestReplaceParentSwapRace(t *testing.T) {
	root, outside := fixture(t)
	e := newEditor(t, root, 1<<10)
	d := filepath.Join(root, "d")
	real := filepath.Join(root, "d.real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(root, "d.evil")
	if err := os.Symlink(filepath.Join(outside, "dir"), evil); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d.real", d); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			src := "d.real"
			if i%2 == 1 {
				src = evil
			}
			tmp := filepath.Join(root, "d.tmp")
			_ = os.Remove(tmp)
			if err := os.Symlink(src, tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, d); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	n := 2000
	if testing.Short() {
		n = 200
	}
	ok := 0
	escapes := 0
	for i := 0; i < n; i++ {
		// Flip the inside file between SECRET and INSIDE; the outside file
		// must stay SECRET whatever the parent pointed to at each moment.
		_, err := e.Replace("d/f", "SECRET", "INSIDE")
		if errors.Is(err, ErrNoMatch) {
			_, err = e.Replace("d/f", "INSIDE", "SECRET")
		}
		switch {
		case err == nil:
			ok++
		case errors.Is(err, fsx.ErrEscape):
			escapes++
		case errors.Is(err, ErrNoMatch), errors.Is(err, ErrNotExist), errors.Is(err, ErrChanged):
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if got := readFile(t, filepath.Join(outside, "dir", "f")); got != "SECRET\n" {
		t.Fatalf("a write escaped through a swapped parent symlink: outside file is %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(outside, "dir"))
	if len(entries) != 1 {
		t.Fatalf("files created outside the root: %v", entries)
	}
	if ok == 0 || escapes == 0 {
		t.Errorf("the race was not exercised: %d edits inside, %d escapes refused", ok, escapes)
	}
	t.Logf("%d of %d edits landed inside, %d refused as escapes, while the parent flipped", ok, n, escapes)
}

func TestNew(t *testing.T) {
	root, _ := fixture(t)
	if _, err := New(filepath.Join(root, "missing"), Options{}); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("New(missing) = %v; want exit %d", err, exitcode.NotFound)
	}
	if _, err := New(filepath.Join(root, "a.go"), Options{}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("New(file) = %v; want exit %d", err, exitcode.Usage)
	}
	// A root reached through a symlink is resolved once.
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	e, err := New(link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if real, _ := filepath.EvalSymlinks(root); e.Root() != real {
		t.Errorf("Root() = %s; want %s", e.Root(), real)
	}
	if e.MaxFileBytes() != DefaultMaxFileBytes {
		t.Errorf("MaxFileBytes() = %d", e.MaxFileBytes())
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noTempFiles(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".art-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
