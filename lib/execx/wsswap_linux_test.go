//go:build linux

package execx

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/art-runtime/art/lib/execx/shim"
)

// TestWorkspaceSwapRace: a task whose workspace holds another task's
// workspace (a shared-mode task beside a copy-mode one) keeps exchanging
// that workspace, a real directory, with a symlink to a directory outside
// it, while tasks start in it under landlock and strict (and landlock on
// a pooled supervisor, whose exec stage builds the view as root). Every
// started task writes a marker into its working directory (the workspace
// root) and tries to write one into the outside directory by its absolute path.
// A task that started in the outside directory (the symlink was there
// when the run was prepared: the workspace path named it) may write
// there; a task that started in the real directory must not: its rules
// and mount view were made from what the run opened, not from a path
// looked up again. Counted from outside, after the runs.
func TestWorkspaceSwapRace(t *testing.T) {
	e := newAttackEnv(t)
	tries := soakTries("EXECX_SWAP_TRIES", 10, 25)
	// landlock+pool: on a pooled supervisor, where as root the exec
	// stage builds the read-only view itself (and checks the trees the
	// same way) in a mount namespace of its own.
	for _, name := range []string{"landlock", "strict", "landlock+pool"} {
		t.Run(name, func(t *testing.T) {
			m, pooled := strings.CutSuffix(name, "+pool")
			mode := Isolation(m)
			opt := Options{}
			if pooled {
				opt.Pool = NewPool(1)
				defer opt.Pool.Close()
			}
			needLandlock(t)
			if mode == IsolationStrict {
				needNamespaces(t)
			}
			base, err := os.MkdirTemp("", "execx-wsswap-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			base, _ = filepath.EvalSymlinks(base)
			ws, evil, outside := filepath.Join(base, "ws"), filepath.Join(base, "ws.evil"), filepath.Join(base, "outside")
			for _, d := range []string{ws, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, evil); err != nil {
				t.Fatal(err)
			}
			// The attacker: a task with the parent directory as its
			// workspace, exchanging ws and ws.evil until cancelled.
			atk := &Policy{Allow: []string{attackName}, Workspace: base, Path: []string{e.bin}, Isolation: IsolationNone}
			atk.Default()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := Run(ctx, atk, NewTask(attackName, "swap", "ws", "ws.evil"), Options{Supervised: true}); err != nil {
					t.Error(err)
				}
			}()
			p := &Policy{Allow: []string{"sh"}, Workspace: ws, Isolation: mode}
			p.Default()
			var in []int // the tries that started in the real workspace
			ranOut, refused := 0, 0
			// Past the tries, on until one task started in the real
			// workspace (the state under test), within a bound: with a
			// few tries a run can miss it by chance.
			n := 0
			for i := 0; i < tries || len(in) == 0 && i < 4*tries; i++ {
				n++
				task := sh(`echo in > m.$1; echo out > "$2/o.$1"; true`)
				task.Args = append(task.Args, "_", fmt.Sprint(i), outside)
				if _, err := Run(context.Background(), p, task, opt); err != nil {
					refused++
					continue
				}
				if _, err := os.Stat(filepath.Join(outside, "m."+fmt.Sprint(i))); err == nil {
					ranOut++ // started in the outside directory: its own workspace then
					continue
				}
				in = append(in, i)
			}
			cancel()
			wg.Wait()
			// The real workspace, under whichever name it has now.
			real := ws
			if fi, err := os.Lstat(ws); err != nil || !fi.IsDir() {
				real = evil
			}
			for _, i := range in {
				if _, err := os.Stat(filepath.Join(outside, "o."+fmt.Sprint(i))); err == nil {
					t.Errorf("try %d: a task started in the workspace wrote into the outside directory", i)
				}
				if _, err := os.Stat(filepath.Join(real, "m."+fmt.Sprint(i))); err != nil {
					t.Errorf("try %d: a task started in the workspace could not write to it (its rules were made for another directory)", i)
				}
			}
			t.Logf("%s: %d tries: %d started in the workspace, %d in the directory the symlink named, %d refused",
				name, n, len(in), ranOut, refused)
			if len(in) == 0 {
				t.Errorf("no task started in the real workspace: the race never hit the state under test")
			}
		})
	}
}

// TestStrictWorkspaceNosuid: under strict, a setuid binary in the
// workspace (left there by anyone: an earlier task, another user) gives
// the task that runs it nothing: the workspace and temp dir are mounted
// nosuid and nodev in the task's view (seen from inside, in its own
// mountinfo), and the binary runs with the task's own effective uid. (No
// new privileges, set for every strict task, also refuses setuid on its
// own; the mount flag is the layer that holds without it.)
func TestStrictWorkspaceNosuid(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	if os.Geteuid() != 0 {
		t.Skip("making a setuid binary owned by another user needs root")
	}
	p := policyFor(t, IsolationStrict, "sh")
	ws, _ := filepath.EvalSymlinks(p.Workspace)
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	idBin, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id binary")
	}
	data, err := os.ReadFile(idBin)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(ws, "suid-id")
	if err := os.WriteFile(suid, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Owned by nobody, setuid: run by root, it would become nobody if the
	// bit were honoured (an observable change; root gains nothing else).
	if err := os.Chown(suid, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, p, sh(`for d in "$PWD" "$TMPDIR"; do awk -v d="$d" '$5==d {m=$6} END {print "mount", m}' /proc/self/mountinfo; done; echo "euid $(./suid-id -u)"`), Options{})
	if res.Status != StatusSucceeded {
		t.Fatalf("%s: %s", res.Status, res.Output)
	}
	var mounts int
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 2 && f[0] == "mount":
			mounts++
			opts := "," + f[1] + ","
			if !strings.Contains(opts, ",nosuid,") || !strings.Contains(opts, ",nodev,") || !strings.Contains(opts, ",rw,") {
				t.Errorf("a writable tree is mounted %s in the task's view; want rw,nosuid,nodev", f[1])
			}
		case len(f) == 2 && f[0] == "euid":
			if f[1] != "0" {
				t.Errorf("the setuid binary ran with euid %s; want the task's own, 0", f[1])
			}
		default:
			t.Errorf("unexpected output line %q", line)
		}
	}
	if mounts != 2 {
		t.Errorf("%d writable trees found in the task's mountinfo; want 2 (workspace and temp dir):\n%s", mounts, res.Output)
	}
}

// wsAndOutside makes a workspace and a directory beside it, outside, both
// u's and 0755, under a temp dir u can reach (t.TempDir's parent is the
// test's user's only).
func wsAndOutside(t *testing.T, u attackUser) (ws, outside string) {
	t.Helper()
	base, err := os.MkdirTemp("", "execx-trees-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{base, ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, u.uid(), u.gid()); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

// TestPooledLandlockWritableTrees: a pooled landlock supervisor, as root
// and as an unprivileged user, receives the workspace and temp dir as
// descriptors with each task, and the exec stage makes its rules (and
// its read-only mount view, in a mount namespace of the stage's own: as
// root, and as a user in the user namespace of its supervisor) from
// them: the task writes in both and nowhere else, and cannot chmod what
// is outside either (Landlock has no right for chmod; the view makes it
// EROFS), seen from outside; the task's parent is a serving supervisor.
func TestPooledLandlockWritableTrees(t *testing.T) {
	needLandlock(t)
	e := newAttackEnv(t)
	for _, u := range attackUsers() {
		t.Run(u.name, func(t *testing.T) {
			ws, outside := wsAndOutside(t, u)
			script := `echo ws > in-ws && echo tmp > "$TMPDIR/f" && cat "$TMPDIR/f" && if (echo out > "$1/out") 2>/dev/null; then echo wrote; else echo refused; fi
chmod 0777 "$1" 2>/dev/null && echo chmodded
cat /proc/$PPID/cmdline | tr '\0' ' '; echo`
			cfg := attackRunner{Mode: "landlock", WS: ws, Bin: e.bin, Program: "sh", Args: []string{"-c", script, "_", outside}, Pool: true}
			rep, _ := runAttackRunner(t, e, u, cfg, "pooltrees")
			want, mode := "tmp\nrefused\n", fs.FileMode(0o755)
			serve := shim.Arg0 + " serve \n"
			switch {
			case u.uid() == 0:
			case userNSUsable():
				// The user's own namespaces: a view as root's, and the
				// serving supervisor is the task's PID 1, named with the
				// ids it maps.
				serve = fmt.Sprintf("%s serve:%d:%d \n", shim.Arg0, u.uid(), u.gid())
			default:
				// No view: Landlock has no right for chmod, so the
				// user's own directory outside is theirs to chmod
				// (docs/artexec.md says so).
				want, mode = want+"chmodded\n", 0o777
			}
			want += serve
			if got := rep.Output; got != want {
				t.Errorf("task output %q; want %q: the temp dir written, the outside write and chmod refused, on a serving supervisor", got, want)
			}
			if _, err := os.Stat(filepath.Join(ws, "in-ws")); err != nil {
				t.Errorf("the task could not write its workspace: %v", err)
			}
			if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
				t.Error("the task wrote outside its workspace")
			}
			if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != mode {
				t.Errorf("the directory outside: %v, %v; want mode %v", fi.Mode(), err, mode)
			}
		})
	}
}

// Where the kernel refuses an unprivileged user's namespaces, landlock
// still runs — one-shot and pooled — without them, as before they were
// added: the Result lists none of them, and the task can chmod its user's
// directory outside the workspace (no read-only view; docs/artexec.md's
// table, note ³).
func TestLandlockUserWithoutNamespaces(t *testing.T) {
	needLandlock(t)
	u := unprivilegedUser(t)
	e := newAttackEnv(t)
	for _, pool := range []bool{false, true} {
		t.Run(fmt.Sprintf("pool=%v", pool), func(t *testing.T) {
			ws, outside := wsAndOutside(t, u)
			// The private TMPDIR: the view's /dev/shm is gone with the
			// view, so it is one the runner makes (in its TMPDIR, /tmp).
			cfg := attackRunner{Mode: "landlock", WS: ws, Bin: e.bin, Program: "sh",
				Args: []string{"-c", `chmod 0777 "$1" && echo chmodded && echo t > "$TMPDIR/t" && case "$TMPDIR" in /tmp/artexec-*) echo runner-tmp;; esac`, "_", outside},
				Pool: pool, RefuseNS: true}
			rep, _ := runAttackRunner(t, e, u, cfg, "nons")
			if rep.Status != string(StatusSucceeded) || rep.Output != "chmodded\nrunner-tmp\n" {
				t.Errorf("status %s, output %q; want succeeded, chmodded, runner-tmp", rep.Status, rep.Output)
			}
			for _, layer := range []string{"namespace.user", "namespace.pid", "namespace.mount", layerMountProc, layerReadOnly, layerMountTmp} {
				if slices.Contains(rep.Enforced, layer) {
					t.Errorf("enforced lists %s for a run the kernel refused its namespaces: %v", layer, rep.Enforced)
				}
			}
			if !slices.Contains(rep.Enforced, "landlock.fs") {
				t.Errorf("enforced %v: no landlock.fs", rep.Enforced)
			}
		})
	}
}
