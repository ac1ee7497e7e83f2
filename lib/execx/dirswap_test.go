package execx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/fsx"
)

// TestDirSwapRace: while tasks start in task.dir "d", an attacker outside
// the runner (another goroutine, as a second task would) flips d between a
// directory of the workspace and a symlink to a directory outside it. No
// task may ever run in the outside directory: each one either runs in the
// inside directory or is refused before it starts.
func TestDirSwapRace(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh")
	ws := p.Workspace
	outside := t.TempDir()
	inside := filepath.Join(ws, "d.real")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	realInside, _ := filepath.EvalSymlinks(inside)
	if err := os.Symlink("d.real", filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	stop := systest.SwapSymlink(t, filepath.Join(ws, "d"), "d.real", outside)
	n := 150
	if testing.Short() {
		n = 40
	}
	// At least n tries, and on until the race hit both states (a loaded
	// machine can run many tries in one state): at most 10n.
	ran, refused := 0, 0
	for i := 0; i < n || (ran == 0 || refused == 0) && i < 10*n; i++ {
		task := sh("pwd -P; touch marker")
		task.Dir = "d"
		res, err := Run(context.Background(), p, task, Options{})
		if err != nil {
			if !errors.Is(err, fsx.ErrEscape) && !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "task.dir") {
				t.Fatalf("Run = %v; want a Result or a task.dir refusal", err)
			}
			refused++
			continue
		}
		if got := strings.TrimSpace(res.Output); got != realInside {
			t.Fatalf("the task ran in %q; want %q (the workspace's directory)", got, realInside)
		}
		ran++
	}
	stop()
	if _, err := os.Stat(filepath.Join(outside, "marker")); err == nil {
		t.Fatal("a task wrote into the outside directory")
	}
	if ran == 0 || refused == 0 {
		t.Errorf("%d ran, %d refused in %d tries: the race never hit both states", ran, refused, 10*n)
	}
	t.Logf("%d tasks ran inside, %d were refused; none ran outside", ran, refused)
}
