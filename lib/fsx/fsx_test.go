package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

func TestCheckRel(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{".", true},
		{"a/b.txt", true},
		{"a/./b", true},
		{"a..b", true},
		{"", false},
		{"/etc/passwd", false},
		{"../x", false},
		{"a/../../x", false},
		{"a/..", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		err := CheckRel(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("CheckRel(%q) = %v; want ok=%v", tt.path, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrEscape) {
			t.Errorf("CheckRel(%q) error %v does not wrap ErrEscape", tt.path, err)
		}
	}
}

// workspace builds root/{in.txt, sub/, link-in -> in.txt, link-out -> outside,
// abs-out -> /etc/passwd} and an outside file next to root.
func workspace(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "ws")
	outside = filepath.Join(base, "secret.txt")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside"), 0o644))
	must(t, os.WriteFile(outside, []byte("secret"), 0o644))
	must(t, os.Symlink("in.txt", filepath.Join(root, "link-in")))
	must(t, os.Symlink("../secret.txt", filepath.Join(root, "link-out")))
	must(t, os.Symlink(outside, filepath.Join(root, "abs-out")))
	must(t, os.Symlink("..", filepath.Join(root, "sub", "up")))
	must(t, os.Symlink("../..", filepath.Join(root, "sub", "upup")))
	return root, outside
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenBeneath(t *testing.T) {
	root, _ := workspace(t)
	tests := []struct {
		rel     string
		want    string // content, or "" for a directory
		escape  bool
		missing bool
	}{
		{rel: "in.txt", want: "inside"},
		{rel: "link-in", want: "inside"},
		{rel: "sub/up/in.txt", want: "inside"},
		{rel: ".", want: ""},
		{rel: "link-out", escape: true},
		{rel: "abs-out", escape: true},
		{rel: "sub/upup/secret.txt", escape: true},
		{rel: "../secret.txt", escape: true},
		{rel: "/etc/passwd", escape: true},
		{rel: "nope.txt", missing: true},
	}
	for _, tt := range tests {
		f, err := OpenBeneath(root, tt.rel, os.O_RDONLY)
		switch {
		case tt.escape:
			if !errors.Is(err, ErrEscape) {
				t.Errorf("OpenBeneath(%q) = %v; want an escape refusal", tt.rel, err)
			}
		case tt.missing:
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("OpenBeneath(%q) = %v; want not-exist", tt.rel, err)
			}
		default:
			if err != nil {
				t.Errorf("OpenBeneath(%q) = %v; want success", tt.rel, err)
				continue
			}
			if tt.want != "" {
				b := make([]byte, 64)
				n, _ := f.Read(b)
				if got := string(b[:n]); got != tt.want {
					t.Errorf("OpenBeneath(%q) read %q; want %q", tt.rel, got, tt.want)
				}
			}
		}
		if f != nil {
			f.Close()
		}
	}
	if _, err := OpenBeneath(root, "new.txt", os.O_WRONLY|os.O_CREATE); !errors.Is(err, ErrEscape) {
		t.Errorf("OpenBeneath with O_CREATE = %v; want refusal", err)
	}
}

// TestOpenBeneathSwapRace: an attacker outside the opener (another
// goroutine, as a task process would) flips a directory component between
// a real directory and a symlink to an outside directory while files are
// opened through it. No open may ever return the outside file, whatever the
// component was at each step; the opens that do succeed read the inside one.
func TestOpenBeneathSwapRace(t *testing.T) {
	root, _ := workspace(t)
	outsideDir := filepath.Join(filepath.Dir(root), "outdir")
	must(t, os.Mkdir(outsideDir, 0o755))
	must(t, os.WriteFile(filepath.Join(outsideDir, "f"), []byte("secret"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "d.real"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d.real", "f"), []byte("inside"), 0o644))
	must(t, os.Symlink(outsideDir, filepath.Join(root, "d.evil")))
	must(t, os.Symlink("d.real", filepath.Join(root, "d")))
	stop := systest.SwapSymlink(t, filepath.Join(root, "d"), "d.real", outsideDir)
	n := 5000
	if testing.Short() {
		n = 500
	}
	inside, refused := 0, 0
	for range n {
		for _, rel := range []string{"d/f", "d/./f"} {
			f, err := OpenBeneath(root, rel, os.O_RDONLY)
			if err != nil {
				if !errors.Is(err, ErrEscape) && !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("OpenBeneath(%s) = %v; want the file, an escape refusal or not-exist (mid-rename)", rel, err)
				}
				refused++
				continue
			}
			b := make([]byte, 16)
			k, _ := f.Read(b)
			f.Close()
			if string(b[:k]) != "inside" {
				t.Fatalf("OpenBeneath(%s) read %q: the open left the root", rel, b[:k])
			}
			inside++
		}
	}
	stop()
	if inside == 0 || refused == 0 {
		t.Errorf("%d inside opens, %d refused: the race never hit both states", inside, refused)
	}
	t.Logf("%d opens read the inside file, %d were refused; none left the root", inside, refused)
}

func TestResolveBeneath(t *testing.T) {
	root, _ := workspace(t)
	got, err := ResolveBeneath(root, "sub")
	if err != nil {
		t.Fatal(err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	if got != filepath.Join(realRoot, "sub") {
		t.Errorf("ResolveBeneath(sub) = %q; want %q", got, filepath.Join(realRoot, "sub"))
	}
	if _, err := ResolveBeneath(root, "link-out"); !errors.Is(err, ErrEscape) {
		t.Errorf("ResolveBeneath(link-out) = %v; want escape", err)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	must(t, WriteFile(p, []byte("one"), FileMode))
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != FileMode {
		t.Errorf("new file mode = %v; want %v", fi.Mode().Perm(), FileMode)
	}
	must(t, os.Chmod(p, 0o640))
	must(t, WriteFile(p, []byte("two"), FileMode))
	b, _ := os.ReadFile(p)
	fi, _ = os.Stat(p)
	if string(b) != "two" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after replace: %q mode %v; want \"two\" 0640 (mode kept)", b, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries; want only the target (no temp left)", len(entries))
	}
	err = WriteFile(filepath.Join(dir, "missing", "x"), []byte("x"), FileMode)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("WriteFile into a missing dir = %v; want an error naming the path", err)
	}
}

func TestLocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if locked, err := IsLocked(p); err != nil || locked {
		t.Fatalf("IsLocked(missing) = %v, %v; want false, nil", locked, err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("IsLocked created the lock file; it must not write")
	}
	l, err := LockFile(p)
	must(t, err)
	if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock while held = %v; want ErrLocked", err)
	}
	if locked, _ := IsLocked(p); !locked {
		t.Errorf("IsLocked while held = false; want true")
	}
	must(t, l.Unlock())
	l2, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after unlock = %v", err)
	}
	must(t, l2.Unlock())
}

func FuzzOpenBeneath(f *testing.F) {
	for _, s := range []string{"in.txt", "..", "../secret.txt", "/etc/passwd", "link-out", "abs-out", "sub/upup/secret.txt", "a\x00b", "", ".", "sub//up/./in.txt"} {
		f.Add(s)
	}
	root, _ := workspace(f)
	f.Fuzz(func(t *testing.T, rel string) {
		file, err := OpenBeneath(root, rel, os.O_RDONLY)
		if err != nil {
			return
		}
		defer file.Close()
		// Whatever opened must be inside the root: its content is never the secret.
		b := make([]byte, 16)
		n, _ := file.Read(b)
		if string(b[:n]) == "secret" {
			t.Fatalf("OpenBeneath(%q) escaped the root", rel)
		}
	})
}

// TestLockerSetInfo: a holder's info replaces the lock file's contents,
// in place when it is as long as the last (one write, no truncate); a
// longer line another holder wrote meanwhile leaves its tail after ours,
// and the first line is still ours; info of another length truncates.
func TestLockerSetInfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	l := NewLocker(path, 0)
	defer l.Close()
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	l.SetInfo([]byte("one 1\n"))
	l.SetInfo([]byte("two 2\n"))
	if got := read(); got != "two 2\n" {
		t.Fatalf("after two infos of one length the file holds %q", got)
	}
	// Another process wrote a longer line (as a holder between our locks).
	if err := os.WriteFile(path, []byte("another holder's longer line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.SetInfo([]byte("six 6\n"))
	got := read()
	if first, _, _ := strings.Cut(got, "\n"); first != "six 6" {
		t.Fatalf("first line %q (file %q); want ours", first, got)
	}
	l.SetInfo([]byte("a longer one\n"))
	if got := read(); got != "a longer one\n" {
		t.Fatalf("info of another length: file holds %q", got)
	}
}
