//go:build linux

package execx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx/stage"
)

// The private TMPDIR of a task with a mount view (strict; landlock as
// root) is the view's fresh /dev/shm, seen from where an attacker
// stands: inside, the task writes its TMPDIR, sees nothing of the host's
// /dev/shm or of an earlier task's TMPDIR (pooled: the second task runs on
// the same supervisor), and cannot write past its memory limit there;
// outside, nothing it wrote is on the host, and nothing was made in the
// runner's TMPDIR for it.
func TestPrivateTmpIsTheViews(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("landlock's view as root; as a user see TestLandlockUserWithoutNamespaces")
	}
	if !privateTmpFits(nil) {
		t.Skipf("no %s", stage.ShmDir())
	}
	shm := stage.ShmDir()
	marker := filepath.Join(shm, fmt.Sprintf("art-host-secret-%d", time.Now().UnixNano()))
	writeFile(t, marker, "secret\n")
	defer os.Remove(marker)
	token := fmt.Sprintf("art-task-file-%d", time.Now().UnixNano())
	for _, c := range viewModes {
		t.Run(c.name, func(t *testing.T) {
			if c.iso == IsolationStrict {
				needNamespaces(t)
			}
			runnerTmp := t.TempDir()
			t.Setenv("TMPDIR", runnerTmp)
			p := policyFor(t, c.iso, "sh", "cat", "dd", "ls", "grep")
			opt := Options{}
			if c.pool {
				pool := NewPool(1)
				defer pool.Close()
				opt = Options{Supervised: true, Pool: pool}
			}
			for run := range 2 {
				task := sh(`echo "TMPDIR=$TMPDIR"
ls -A "$TMPDIR" | grep -q art- && echo saw-other-files
echo mine > "$TMPDIR/` + token + `" && cat "$TMPDIR/` + token + `"
cat ` + marker + ` 2>/dev/null || echo host-file-hidden
dd if=/dev/zero of="$TMPDIR/big" bs=1M count=96 2>/dev/null || echo capped`)
				task.Limits.MemoryBytes = 64 << 20 // the tmpfs's size too
				res := mustRun(t, p, task, opt)
				if res.Status != StatusSucceeded {
					t.Fatalf("run %d: %s (exit %d): %s %s", run, res.Status, res.ExitCode, res.Output, res.Error)
				}
				want := "TMPDIR=" + shm + "\nmine\nhost-file-hidden\ncapped\n"
				if res.Output != want {
					t.Errorf("run %d: output %q; want %q", run, res.Output, want)
				}
				if !slices.Contains(res.Isolation.Enforced, layerMountTmp) {
					t.Errorf("run %d: enforced %v: no %s", run, res.Isolation.Enforced, layerMountTmp)
				}
				if _, err := os.Stat(filepath.Join(shm, token)); err == nil {
					t.Errorf("run %d: the task's file is in the host's %s", run, shm)
				}
				if made, _ := os.ReadDir(runnerTmp); len(made) != 0 {
					t.Errorf("run %d: the run made %v in the runner's TMPDIR", run, made)
				}
			}
		})
	}
}

// A runner killed with SIGKILL while its task runs leaves nothing of the
// task's private TMPDIR on the host: it ends with the task's mount
// namespace. (A TMPDIR the runner made in its own TMPDIR stayed there,
// with whatever the task had written into it.)
func TestPrivateTmpOutlivesNoKilledRunner(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 || !privateTmpFits(nil) {
		t.Skip("landlock's view as root, with a /dev/shm")
	}
	ws, runnerTmp := t.TempDir(), t.TempDir()
	runner := exec.Command(os.Args[0], "-test.run=^$")
	runner.Env = append(os.Environ(), "EXECX_TEST_RUNNER=landlock", "EXECX_TEST_WORKSPACE="+ws, "TMPDIR="+runnerTmp)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	task := readPid(t, filepath.Join(ws, "pid"))
	_ = runner.Process.Signal(syscall.SIGKILL)
	_ = runner.Wait()
	waitGone(t, task, 10*time.Second)
	if left, _ := os.ReadDir(runnerTmp); len(left) != 0 {
		t.Errorf("a killed runner left %v in its TMPDIR", left)
	}
}

// A writable tree that is /dev/shm itself (the workspace here) keeps its
// place: the view makes no fresh /dev/shm, and the task's private TMPDIR
// is one the runner makes in its own TMPDIR and removes, as without a
// view.
func TestPrivateTmpBesideWorkspaceShm(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("landlock's view as root")
	}
	if st, err := os.Stat(stage.ShmDir()); err != nil || !st.IsDir() {
		t.Skipf("no %s", stage.ShmDir())
	}
	for _, trees := range [][]string{{stage.ShmDir()}, {"/"}, {filepath.Dir(stage.ShmDir())}} {
		if privateTmpFits(trees) {
			t.Errorf("privateTmpFits(%q): a tree that is or holds /dev/shm must keep its place", trees)
		}
	}
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	p := policyFor(t, IsolationLandlock, "sh")
	p.Workspace = stage.ShmDir()
	res := mustRun(t, p, sh(`case "$TMPDIR" in `+base+`/artexec-*) echo runner-tmp;; esac; echo x > "$TMPDIR/f" && echo tmp-written`), Options{})
	if res.Status != StatusSucceeded || res.Output != "runner-tmp\ntmp-written\n" {
		t.Errorf("%s: %q %s; want the runner's TMPDIR, written", res.Status, res.Output, res.Error)
	}
	if slices.Contains(res.Isolation.Enforced, layerMountTmp) {
		t.Errorf("enforced %v lists %s", res.Isolation.Enforced, layerMountTmp)
	}
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Errorf("the runner's private TMPDIR was not removed: %v", left)
	}
}
