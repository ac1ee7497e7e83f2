//go:build linux

package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/worker"
)

// TestCopyTreeSwapAttack: a shared-mode task, running beside copy-mode
// tasks in the same worker (-j 2, landlock), keeps replacing each copy
// tree it can name with a symlink to a directory outside — where the
// trees used to live (WORKSPACE/.artq/work/ID-N) and where they live now
// (the worker's WorkDir, beside the queue) — and keeps replacing the
// worker's output directory with a symlink too. Each copy-mode task
// writes a marker in its working directory. Seen from outside: nothing
// lands in the outside directory, every copy-mode task ran in its own
// tree, and every output file is in the output directory.
func TestCopyTreeSwapAttack(t *testing.T) {
	treeSwapAttack(t, &queue.RunSpec{Workspace: queue.WorkspaceCopy}, nil)
}

// TestWorktreeSwapAttack is the same attack on worktree-mode tasks: each
// attempt's git worktree, made by git under the worker's policy with the
// new tree as an extra writable directory, is in the worker's WorkDir,
// where no task can reach it. (It used to be WORKSPACE/.artq/work/ID-N,
// which every shared-mode task can write.)
func TestWorktreeSwapAttack(t *testing.T) {
	treeSwapAttack(t, &queue.RunSpec{Workspace: queue.WorkspaceWorktree, Source: "repo"}, func(e *env) {
		gitRepo(t, filepath.Join(e.ws, "repo"))
	})
}

// treeSwapAttack runs the attack of TestCopyTreeSwapAttack on tasks of
// spec; setup, if set, prepares the workspace first.
func treeSwapAttack(t *testing.T, spec *queue.RunSpec, setup func(*env)) {
	if execx.Probe().Landlock.ABI == 0 {
		t.Skip("no Landlock")
	}
	e := newEnv(t)
	if setup != nil {
		setup(e)
	}
	outside, out := t.TempDir(), filepath.Join(e.dir, "out")
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"sh", "mv", "ln", "mkdir", "sleep", "git"}, Workspace: e.ws, Isolation: execx.IsolationLandlock})
	if err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	const victims = 25
	attack := fmt.Sprintf(`mkdir -p .artq/work
while [ ! -e stop ]; do
  i=0
  while [ $i -lt %d ]; do
    for d in .artq/work/v$i-1 %s/v$i-1; do
      mv "$d" "$d.x" 2>/dev/null && ln -s %s "$d" 2>/dev/null
    done
    i=$((i+1))
  done
  mv %s %s.x 2>/dev/null && ln -s %s %s 2>/dev/null
done
exit 0`, victims, e.work(), outside, out, out, outside, out)
	e.enqueueRun(t, "attacker", &queue.RunSpec{}, "sh", "-c", attack)
	for i := range victims {
		e.enqueueRun(t, fmt.Sprintf("v%d", i), spec, "sh", "-c", "echo pwned > marker; pwd -P")
	}
	stop := serve(t, e, worker.Config{Concurrency: 2, Keep: worker.KeepAlways, OutputDir: out})
	for i := range victims {
		e.waitState(t, fmt.Sprintf("v%d", i), queue.StateSucceeded)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, "attacker", queue.StateSucceeded)
	stop(nil)
	ents, _ := os.ReadDir(outside)
	for _, ent := range ents {
		t.Errorf("%s was written outside", ent.Name())
	}
	work, _ := filepath.EvalSymlinks(e.work())
	for i := range victims {
		id := fmt.Sprintf("v%d", i)
		tree := worker.TreePath(work, id, 1)
		if _, err := os.Stat(filepath.Join(tree, "marker")); err != nil {
			t.Errorf("%s: no marker in its own tree: %v", id, err)
		}
		got, err := os.ReadFile(filepath.Join(out, id+".1.out"))
		if err != nil || strings.TrimSpace(string(got)) != tree {
			t.Errorf("%s: output %q (%v); want it ran in %s", id, got, err, tree)
		}
	}
}
