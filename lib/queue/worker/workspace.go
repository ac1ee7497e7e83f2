package worker

import (
	"context"
	"fmt"
	"github.com/art-runtime/art/lib/queue"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Keep says which per-attempt workspaces a worker leaves in place once the
// attempt's result is recorded.
type Keep string

// Keep policies.
const (
	// KeepFailed (the default) removes the workspace of a task that
	// succeeded and keeps the others (failed, cancelled) for inspection.
	KeepFailed Keep = "failed"
	KeepAlways Keep = "always"
	KeepNever  Keep = "never"
)

// KeepPolicies lists every policy, for flags.
var KeepPolicies = []Keep{KeepFailed, KeepAlways, KeepNever}

// TreePath is where attempt of task runs in copy and worktree mode: under
// the worker's WorkDir, outside every tree a task can write, so no task
// can swap the tree, or a directory on its path, for a symlink to
// somewhere else.
func TreePath(workDir, task string, attempt int) string {
	return filepath.Join(workDir, treeName(task, attempt))
}

func treeName(task string, attempt int) string { return task + "-" + strconv.Itoa(attempt) }

// taskWorkspace is where one attempt runs: the policy to run it under (for
// copy and worktree, narrowed to the attempt's own directory, so even the
// writes Landlock allows stay in it) and how to remove it.
type taskWorkspace struct {
	mode queue.WorkspaceMode
	pol  *execx.Policy
	// rel is the attempt's directory under base, the worker's WorkDir
	// ("" when shared).
	rel, base string
	// source is the worktree's repository, relative to the policy
	// workspace (worktree only).
	source string
	// Copy figures, for the events.
	files, bytes, skipped int64
	took                  time.Duration
}

// describe is tw for Hooks.
func (tw *taskWorkspace) describe() Workspace {
	d := Workspace{Mode: tw.mode, Prepare: tw.took}
	if tw.rel != "" {
		d.Dir = filepath.Join(tw.base, tw.rel)
	}
	if tw.mode == queue.WorkspaceCopy {
		d.Files, d.Bytes, d.Skipped = tw.files, tw.bytes, tw.skipped
	}
	return d
}

// prepareWorkspace makes the attempt's workspace. A directory left by an
// earlier run of the same attempt (a worker that died before the trace)
// is replaced: the attempt starts again from the source, as it would have.
// Errors say why the task cannot run here: a refusal (126) for a source
// outside the workspace, missing or not a directory; the tool's own failure
// (125) for I/O.
func (w *worker) prepareWorkspace(ctx context.Context, t *queue.Task, spec *queue.RunSpec) (*taskWorkspace, error) {
	tw := &taskWorkspace{mode: spec.Mode(), pol: w.pol}
	if tw.mode == queue.WorkspaceShared {
		return tw, nil
	}
	start := time.Now()
	polWS := w.pol.Workspace
	src := spec.Source
	if src == "" {
		src = "."
	}
	real, err := fsx.ResolveBeneath(polWS, src)
	if err != nil {
		return nil, exitcode.Field(exitcode.Refused, "run.source", src, "%w", err)
	}
	realWS, err := filepath.EvalSymlinks(polWS)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "workspace %s: %w", polWS, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, exitcode.Field(exitcode.Refused, "run.source", src, "not a directory")
	}
	if rel, err := filepath.Rel(realWS, real); err == nil && (rel == queue.WorkDirName || len(rel) > len(queue.WorkDirName) && rel[:len(queue.WorkDirName)+1] == queue.WorkDirName+"/") {
		return nil, exitcode.Field(exitcode.Refused, "run.source", src, "inside the workers' own %s directory", queue.WorkDirName)
	}
	var abs string
	switch tw.mode {
	case queue.WorkspaceCopy:
		if abs, err = w.prepareCopy(ctx, tw, t, spec, real, src, realWS); err != nil {
			return nil, err
		}
	case queue.WorkspaceWorktree:
		if abs, err = w.prepareWorktree(ctx, tw, t, spec, real, src, realWS); err != nil {
			return nil, err
		}
	}
	tw.took = time.Since(start)
	// The attempt's own tree, beside the queue and made by the worker for
	// this attempt, stands in for the workspace: what Landlock lets the
	// task write is that tree alone.
	pol := *w.pol
	pol.Workspace = abs
	tw.pol = &pol
	return tw, nil
}

// attemptTree makes the attempt's empty directory in the worker's WorkDir
// through a descriptor held on it (mkdirat), after removing what an
// earlier run of the same attempt left there, and returns the WorkDir
// opened as a root. A WorkDir inside the workspace, where a task could
// swap it, is refused.
func (w *worker) attemptTree(ctx context.Context, tw *taskWorkspace, t *queue.Task, spec *queue.RunSpec, realWS string) (*os.Root, error) {
	base, err := w.workDir()
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "per-attempt trees: %w", err)
	}
	if within(realWS, base) {
		return nil, exitcode.Field(exitcode.Refused, "WorkDir", base, "%s mode: the per-attempt trees' directory %s is inside the workspace %s, which tasks can write: keep the queue outside the workspace", tw.mode, base, realWS)
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "per-attempt trees %s: %w", base, err)
	}
	tw.base, tw.rel = base, treeName(t.ID, t.Attempt)
	if _, err := root.Lstat(tw.rel); err == nil {
		if err := w.removeWorkspace(ctx, root, tw, spec); err != nil {
			root.Close()
			return nil, exitcode.Errorf(exitcode.Internal, "remove the tree an earlier run of attempt %d left: %w", t.Attempt, err)
		}
	}
	if err := root.Mkdir(tw.rel, 0o700); err != nil {
		root.Close()
		return nil, exitcode.Errorf(exitcode.Internal, "create %s: %w", tw.rel, err)
	}
	return root, nil
}

// prepareCopy makes the attempt's tree (attemptTree) and copies the
// source real into it through descriptors on both.
func (w *worker) prepareCopy(ctx context.Context, tw *taskWorkspace, t *queue.Task, spec *queue.RunSpec, real, src, realWS string) (string, error) {
	root, err := w.attemptTree(ctx, tw, t, spec, realWS)
	if err != nil {
		return "", err
	}
	defer root.Close()
	srcRoot, err := os.OpenRoot(real)
	if err != nil {
		return "", exitcode.Field(exitcode.Internal, "run.source", src, "%w", err)
	}
	defer srcRoot.Close()
	dst, err := root.OpenRoot(tw.rel)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Internal, "open %s: %w", tw.rel, err)
	}
	defer dst.Close()
	st, err := copyTree(ctx, srcRoot, dst)
	tw.files, tw.bytes, tw.skipped = st.files, st.bytes, st.skipped
	if err != nil {
		return "", exitcode.Errorf(exitcode.Internal, "copy %s to %s: %w", src, tw.rel, err)
	}
	return filepath.Join(tw.base, tw.rel), nil
}

// workDir is the worker's WorkDir, absolute, canonical and made (0700)
// on first use: Config.WorkDir, or else a private directory of its own under the
// system's temp dir.
func (w *worker) workDir() (string, error) {
	w.workOnce.Do(func() {
		dir := w.cfg.WorkDir
		if dir == "" {
			dir, w.workErr = os.MkdirTemp("", "artq-work-")
		} else {
			w.workErr = fsx.MkdirState(dir)
		}
		if w.workErr == nil {
			// Absolute: the trees become policy workspaces and git's
			// Options.Writable, whatever directory a later run is in.
			if dir, w.workErr = filepath.Abs(dir); w.workErr == nil {
				w.workPath, w.workErr = filepath.EvalSymlinks(dir)
			}
		}
	})
	return w.workPath, w.workErr
}

// prepareWorktree makes the attempt's git worktree in an empty tree of
// its own (attemptTree), beside the queue like a copy. git, run under the
// worker's policy, must write both the repository (its .git/worktrees)
// and the new tree: it gets the tree as an extra writable directory
// (execx.Options.Writable) for that one run, opened once by the runner.
// No task can write the WorkDir, so the path git is given names the tree
// the worker made.
func (w *worker) prepareWorktree(ctx context.Context, tw *taskWorkspace, t *queue.Task, spec *queue.RunSpec, real, src, realWS string) (string, error) {
	rel, err := filepath.Rel(realWS, real)
	if err != nil {
		return "", exitcode.Field(exitcode.Internal, "run.source", src, "%w", err)
	}
	tw.source = filepath.ToSlash(rel)
	root, err := w.attemptTree(ctx, tw, t, spec, realWS)
	if err != nil {
		return "", err
	}
	root.Close()
	abs := filepath.Join(tw.base, tw.rel)
	// Hooks are the repository's code, not the task's: none run.
	if err := w.git(ctx, tw.source, []string{abs}, "add", "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet", abs, "HEAD"); err != nil {
		return "", err
	}
	return abs, nil
}

// within: p is root or beneath it (both canonical).
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// releaseWorkspace removes the attempt's workspace unless keep says to
// leave it.
func (w *worker) releaseWorkspace(ctx context.Context, tw *taskWorkspace, spec *queue.RunSpec, succeeded bool) error {
	if tw == nil || tw.rel == "" {
		return nil
	}
	switch w.cfg.Keep {
	case KeepAlways:
		return nil
	case KeepFailed, "":
		if !succeeded {
			return nil
		}
	}
	root, err := os.OpenRoot(tw.base)
	if err != nil {
		return err
	}
	defer root.Close()
	return w.removeWorkspace(ctx, root, tw, spec)
}

// removeWorkspace removes the attempt's directory through root, the
// WorkDir (so a symlink swapped into the path cannot point the removal
// elsewhere); a worktree is then pruned from its repository by git, which
// needs to write nothing but the repository for that.
func (w *worker) removeWorkspace(ctx context.Context, root *os.Root, tw *taskWorkspace, spec *queue.RunSpec) error {
	if err := root.RemoveAll(tw.rel); err != nil {
		return err
	}
	if spec.Mode() != queue.WorkspaceWorktree {
		return nil
	}
	src := tw.source
	if src == "" {
		src = spec.Source
	}
	if src == "" {
		src = "."
	}
	return w.git(ctx, src, nil, "prune", "worktree", "prune")
}

// git runs git in dir (relative to the policy workspace) through the
// runner, under the worker's policy, with writable as extra trees it may
// write: worktree mode needs git in the policy's allowlist, like any
// program the worker starts. what names the step in errors.
func (w *worker) git(ctx context.Context, dir string, writable []string, what string, args ...string) error {
	t := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), Program: "git", Args: args, Dir: dir,
		Limits: execx.Limits{Timeout: jsonx.Duration(5 * time.Minute)}}
	res, err := execx.Run(ctx, w.pol, t, execx.Options{Supervised: true, Pool: w.pool, Writable: writable})
	if err != nil {
		// A refusal (git not allowed: 126) or a missing git (127) keeps
		// its code: the task is rejected, not the worker broken.
		return exitcode.Errorf(exitcode.Of(err), "workspace worktree: git: %w", err)
	}
	if res.Status != execx.StatusSucceeded {
		return exitcode.Errorf(exitcode.Internal, "workspace worktree: git worktree %s: %s (exit %d): %s", what, res.Status, res.ExitCode, lastLine(res.Output))
	}
	return nil
}

func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

type copyStats struct{ files, bytes, skipped int64 }

// copyTree copies the tree of src into dst (both confined roots: no
// symlink in either can lead the copy outside them): directories, regular
// files with their permission bits and modification times, and symlinks as
// symlinks (never followed). Sockets, FIFOs and devices are skipped and
// counted. A top-level .artq (the per-attempt workspaces themselves, when
// the source is the whole workspace) is never copied.
func copyTree(ctx context.Context, src, dst *os.Root) (copyStats, error) {
	var st copyStats
	type dirMode struct {
		name string
		perm fs.FileMode
		mt   time.Time
	}
	var dirs []dirMode
	err := fs.WalkDir(src.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if name == "." {
			return nil
		}
		if name == queue.WorkDirName && d.IsDir() {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := dst.Mkdir(name, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{name, info.Mode().Perm(), info.ModTime()})
		case d.Type()&fs.ModeSymlink != 0:
			target, err := src.Readlink(name)
			if err != nil {
				return err
			}
			if err := dst.Symlink(target, name); err != nil {
				return err
			}
		case d.Type().IsRegular():
			n, err := copyFile(src, dst, name, info)
			if err != nil {
				return err
			}
			st.files++
			st.bytes += n
		default:
			st.skipped++
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Directory modes last (a read-only directory is filled first), deepest
	// first so a parent's mtime is set after its children changed it.
	slices.Reverse(dirs)
	for _, dm := range dirs {
		if err := dst.Chmod(dm.name, dm.perm); err != nil {
			return st, err
		}
		_ = dst.Chtimes(dm.name, dm.mt, dm.mt)
	}
	return st, nil
}

func copyFile(src, dst *os.Root, name string, info fs.FileInfo) (int64, error) {
	in, err := src.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("%s: changed into a %s during the copy", name, fi.Mode().Type())
		}
		return 0, err
	}
	out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return 0, err
	}
	// File to file: copy_file_range (a reflink on file systems that share
	// extents) where the kernel offers it, else a read/write loop.
	n, err := out.ReadFrom(in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	mt := info.ModTime()
	_ = dst.Chtimes(name, mt, mt)
	return n, nil
}
