//go:build linux

package execx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// A workspace and another writable tree under /dev/shm, which the mount
// view covers with a fresh tmpfs (the task's TMPDIR): the task still sees
// and writes both (each is moved back on top of the new tmpfs), the
// writes land in the host's trees, and nothing else of the host's
// /dev/shm is in view; a workspace that is /dev/shm itself takes the
// fresh one's place (and the TMPDIR is the runner's making) — one-shot
// (landlock as root, strict: the supervisor builds the view) and pooled
// (landlock as root: the task's own process builds it). Before, such a
// run failed: "mount view: working directory ...: no such file or
// directory".
func TestTreesUnderDevShm(t *testing.T) {
	needLandlock(t)
	if st, err := os.Stat(stage.ShmDir()); err != nil || !st.IsDir() {
		t.Skipf("no %s", stage.ShmDir())
	}
	marker := filepath.Join(stage.ShmDir(), fmt.Sprintf("art-host-marker-%d", time.Now().UnixNano()))
	writeFile(t, marker, "")
	defer os.Remove(marker)
	for _, c := range []struct {
		name  string
		iso   Isolation
		pool  bool
		whole bool // the workspace is /dev/shm itself: no fresh one, the host's in view
	}{
		{"landlock", IsolationLandlock, false, false},
		{"strict", IsolationStrict, false, false},
		{"landlock+pool", IsolationLandlock, true, false},
		{"landlock/whole", IsolationLandlock, false, true},
		{"strict/whole", IsolationStrict, false, true},
		{"landlock+pool/whole", IsolationLandlock, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.iso == IsolationStrict {
				needNamespaces(t)
			}
			ws, tree := shmTempDir(t, "art-ws-"), shmTempDir(t, "art-tree-")
			p := policyFor(t, c.iso, "sh")
			p.Workspace = filepath.Join(ws, "nested", "deeper")
			if c.whole {
				p.Workspace = stage.ShmDir()
			}
			if err := os.MkdirAll(p.Workspace, 0o755); err != nil {
				t.Fatal(err)
			}
			f := fmt.Sprintf("art-f-%d", time.Now().UnixNano())
			opt := Options{Writable: []string{tree}}
			if c.pool {
				pool := NewPool(1)
				defer pool.Close()
				opt.Supervised, opt.Pool = true, pool
			}
			for run := range 2 { // the pool's second task runs on a warm supervisor
				task := sh(`echo in-ws > ` + f + ` && echo in-tree > ` + tree + `/g && cat ` + tree + `/g && echo t > "$TMPDIR/t" && echo tmpdir-written; ls -a ` + stage.ShmDir())
				res := mustRun(t, p, task, opt)
				if res.Status != StatusSucceeded {
					t.Fatalf("run %d: %s (exit %d): %s", run, res.Status, res.ExitCode, res.Output)
				}
				if !strings.Contains(res.Output, "in-tree\ntmpdir-written\n") {
					t.Errorf("run %d: output %q: the tree under %s or TMPDIR not written", run, res.Output, stage.ShmDir())
				}
				if b, err := os.ReadFile(filepath.Join(tree, "g")); err != nil || string(b) != "in-tree\n" {
					t.Errorf("run %d: the tree's file on the host: %q, %v", run, b, err)
				}
				if b, err := os.ReadFile(filepath.Join(p.Workspace, f)); err != nil || string(b) != "in-ws\n" {
					t.Errorf("run %d: the workspace file on the host: %q, %v", run, b, err)
				}
				view := slices.Contains(res.Isolation.Enforced, layerReadOnly) && !c.whole
				if hidden := !strings.Contains(res.Output, filepath.Base(marker)); view != hidden {
					t.Errorf("run %d: output %q: with a fresh %s (%v) the host's must be out of sight, else in it", run, res.Output, stage.ShmDir(), view)
				}
				os.Remove(filepath.Join(p.Workspace, f))
			}
		})
	}
}

// withRunnerTmp makes the test's runs take a temp dir of the runner's
// making (runnerTmpOnly), as runs without a mount view do.
func withRunnerTmp(t *testing.T) {
	runnerTmpOnly = true
	t.Cleanup(func() { runnerTmpOnly = false })
}

func shmTempDir(t *testing.T, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp(stage.ShmDir(), pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// The private TMPDIR is made in the runner's TMPDIR: one that does not
// exist fails the run before anything starts, naming it as the place.
func TestTmpdirInMissingTMPDIR(t *testing.T) {
	needLandlock(t)
	withRunnerTmp(t)
	missing := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", missing)
	p := policyFor(t, IsolationLandlock, "true")
	wantRefusal(t, p, NewTask("true"), exitcode.Internal, nil, "private temp dir in "+missing+" (the runner's TMPDIR, else /tmp)")
}

// A relative TMPDIR is the runner's: the private TMPDIR made in it is
// given to the task (and bound into strict's view) by its absolute path,
// since the task starts in another directory. Before, such runs failed
// with "mount view: bind reltmp/artexec-N: no such file or directory".
func TestRelativeTMPDIR(t *testing.T) {
	needLandlock(t)
	withRunnerTmp(t)
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "reltmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	t.Setenv("TMPDIR", "reltmp")
	for _, iso := range []Isolation{IsolationLandlock, IsolationStrict} {
		if iso == IsolationStrict && !Probe().Namespaces.User {
			continue
		}
		res := mustRun(t, policyFor(t, iso, "sh"), sh(`echo "$TMPDIR" && echo x > "$TMPDIR/f" && cat "$TMPDIR/f"`), Options{})
		want := filepath.Join(base, "reltmp") + "/artexec-"
		if res.Status != StatusSucceeded || !strings.HasPrefix(res.Output, want) || !strings.HasSuffix(res.Output, "\nx\n") {
			t.Errorf("%s: %s %q; want TMPDIR under %s, written", iso, res.Status, res.Output, want)
		}
	}
}
