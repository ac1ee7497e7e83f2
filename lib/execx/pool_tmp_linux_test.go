//go:build linux

package execx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A pool hands a finished task's TMPDIR to the next task only as a fresh
// one would be: a task that leaves files, directories, links and pipes in
// it has them removed (and the dir is kept: the test checks it was, or it
// proves nothing), and a task that changes the directory itself — its
// mode, a setgid bit, an extended attribute — gets it removed, the next
// task a new one. What the next task sees is asserted from inside it, and
// the dir it got is read from outside.
func TestPoolTmpdirFresh(t *testing.T) {
	needLandlock(t)
	withRunnerTmp(t)
	link := selfLink(t)
	p := policyFor(t, IsolationLandlock, "sh", attackName)
	p.Path = []string{filepath.Dir(link), "/usr/bin", "/bin"}
	pool := NewPool(1)
	defer pool.Close()
	probe := `ls -A "$TMPDIR" | wc -l; stat -c '%a %h' "$TMPDIR"`
	for _, c := range []struct {
		name, script string
		kept         bool
	}{
		{"files", `mkdir -p "$TMPDIR/d/e" && echo x > "$TMPDIR/d/e/f" && echo y > "$TMPDIR/.h" && ln -s / "$TMPDIR/root" && ln "$TMPDIR/.h" "$TMPDIR/d/hard"`, true},
		{"chmod", `chmod 777 "$TMPDIR"`, false},
		{"sticky", `chmod +t "$TMPDIR"`, false},
		{"xattr", link + ` setxattr "$TMPDIR"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, _ := runOn(t, pool, p, `echo "$TMPDIR"; `+c.script)
			before, out, _ := strings.Cut(res.Output, "\n")
			if c.name == "xattr" && strings.Contains(out, "blocked") && strings.Contains(out, "not supported") {
				t.Skipf("no user xattrs here: %q", out)
			}
			if res.Status != StatusSucceeded || strings.Contains(out, "blocked") {
				t.Fatalf("the change itself failed: %s %q", res.Status, res.Output)
			}
			res, _ = runOn(t, pool, p, `echo "$TMPDIR"; `+probe)
			after, seen, _ := strings.Cut(res.Output, "\n")
			if seen != "0\n700 2\n" {
				t.Errorf("the next task's TMPDIR %s: %q; want empty (0), mode 700, 2 links", after, seen)
			}
			if kept := after == before; kept != c.kept {
				t.Errorf("TMPDIR kept for the next task: %v (%s, then %s); want %v", kept, before, after, c.kept)
			}
			if !c.kept {
				if _, err := os.Lstat(before); !os.IsNotExist(err) {
					t.Errorf("the changed TMPDIR %s: %v; want it removed", before, err)
				}
			}
			var st unix.Stat_t
			if err := unix.Lstat(after, &st); err != nil || st.Mode != unix.S_IFDIR|0o700 || st.Uid != uint32(os.Geteuid()) {
				t.Errorf("from outside, %s: mode %o uid %d (%v); want a directory 0700 of uid %d", after, st.Mode, st.Uid, err, os.Geteuid())
			}
			if n, err := unix.Listxattr(after, nil); err == nil && n != 0 {
				t.Errorf("from outside, %s carries extended attributes (%d bytes of names)", after, n)
			}
		})
	}
	pool.Close()
	pool.mu.Lock()
	kept := len(pool.tmps)
	pool.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d temp dirs kept after Close", kept)
	}
}
