package execx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// Errors Run returns before any process starts. Each carries its exit code
// (README.md, "Exit codes"); test with errors.Is.
var (
	// ErrNotAllowed: the program is not a bare name on the allowlist (126).
	ErrNotAllowed = exitcode.Sentinel(exitcode.Refused, "program not allowed by the policy")
	// ErrProgramNotFound: allowed, but not found in the policy's path (127).
	ErrProgramNotFound = exitcode.Sentinel(exitcode.ProgramNotFound, "program not found")
	// ErrNotExecutable: found, but not executable (126).
	ErrNotExecutable = exitcode.Sentinel(exitcode.Refused, "program not executable")
	// ErrEnvNotAllowed: the task names a variable the policy does not allow (126).
	ErrEnvNotAllowed = exitcode.Sentinel(exitcode.Refused, "environment variable not allowed by the policy")
	// ErrContextTooLarge: a context file is over context_bytes (126).
	ErrContextTooLarge = exitcode.Sentinel(exitcode.Refused, "context file over context_bytes")
	// ErrIsolationUnavailable: the isolation asked for cannot be enforced
	// here and best effort was not allowed (125).
	ErrIsolationUnavailable = exitcode.Sentinel(exitcode.Internal, "isolation unavailable")
	// ErrWidens is Policy.Narrow's refusal of a narrowing that would widen
	// the policy (exit 126).
	ErrWidens = exitcode.Sentinel(exitcode.Refused, "the narrowing would widen the policy")
)

// plan is everything decided before a process starts: after it is built,
// nothing the task says is consulted again.
type plan struct {
	task      *Task
	limits    Limits
	path      string   // resolved program
	argv      []string // argv[0] is the bare program name
	env       []string
	workspace string   // canonical workspace root (for messages and the mount view's target)
	ws        *os.File // the workspace, opened once: every later use goes through it
	dir       *os.File // the working directory, opened beneath ws
	dirPath   string   // its canonical path (for PWD and messages)
	contexts  []*os.File
	iso       isoPlan
	stderr    bool // the program's stderr is a pipe of its own (Options.Stderr)
	pool      *Pool
	// writable and writableFiles are Options.Writable, canonical and
	// opened once (no symlink followed), in order.
	writable      []string
	writableFiles []*os.File
	netProxy      // network allow: the policy's allowlist and, once started, the proxy
}

func (pl *plan) close() {
	pl.stopProxy()
	pl.iso.closeTmpdir()
	for _, f := range append([]*os.File{pl.iso.tmp, pl.ws}, pl.writableFiles...) {
		if f != nil {
			f.Close()
		}
	}
	if pl.dir != nil {
		pl.dir.Close()
	}
	for _, f := range pl.contexts {
		f.Close()
	}
}

// prepare checks t against p and resolves everything the run needs. Any
// error means nothing was started.
func prepare(p *Policy, t *Task, opt *Options) (_ *plan, err error) {
	if p == nil || t == nil {
		return nil, exitcode.Errorf(exitcode.Usage, "execx: nil policy or task")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if t.Dir == "" {
		t = cloneTask(t)
		t.Default()
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	pl := &plan{task: t, stderr: opt.Stderr != nil}
	defer func() {
		if err != nil {
			pl.close()
		}
	}()
	if pl.limits, err = p.EffectiveLimits(t); err != nil {
		return nil, err
	}
	if pl.path, err = resolveProgram(p, t.Program); err != nil {
		return nil, err
	}
	pl.argv = append([]string{t.Program}, t.Args...)
	if pl.workspace, err = filepath.EvalSymlinks(p.Workspace); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, exitcode.Fieldf(exitcode.Usage, "Policy.Workspace", p.Workspace, "workspace %s does not exist", p.Workspace).Because(fs.ErrNotExist)
		}
		return nil, exitcode.Errorf(exitcode.Internal, "workspace: %w", err)
	}
	if pl.workspace == "/" && confinesWrites(p.Isolation) {
		return nil, wholeFilesystem("Policy.Workspace", "workspace", p.Workspace, p.Isolation)
	}
	// The one resolution of the workspace: the working directory, the
	// context files, Landlock's rule and strict's bind mount all start
	// from this descriptor, so a workspace swapped for a symlink from now
	// on changes nothing of the run.
	if pl.ws, err = fsx.OpenDir(pl.workspace); err != nil {
		return nil, exitcode.Field(exitcode.Refused, "Policy.Workspace", p.Workspace, "%w", err)
	}
	if pl.dir, pl.dirPath, err = openDir(pl.ws, pl.workspace, t.Dir); err != nil {
		return nil, err
	}
	for _, dir := range opt.Writable {
		real, f, err := openWritable(dir)
		if err != nil {
			return nil, err
		}
		if real == "/" && confinesWrites(p.Isolation) {
			f.Close()
			return nil, wholeFilesystem("Options.Writable", "writable tree", dir, p.Isolation)
		}
		pl.writable, pl.writableFiles = append(pl.writable, real), append(pl.writableFiles, f)
	}
	for _, rel := range t.Context {
		f, err := openContext(pl.ws, rel, pl.limits.ContextBytes)
		if err != nil {
			return nil, err
		}
		pl.contexts = append(pl.contexts, f)
	}
	if pl.iso, err = planIsolation(p, &pl.limits, opt, append([]string{pl.workspace}, pl.writable...)); err != nil {
		return nil, err
	}
	environ := opt.Environ
	if environ == nil {
		environ = os.Environ()
	}
	if pl.env, err = buildEnv(p, t, environ, pl.dirPath, pl.iso.taskTmpdir()); err != nil {
		return nil, err
	}
	if pl.iso.proxy {
		if pl.env, err = pl.netProxy.prepare(p, opt, pl.env); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

func cloneTask(t *Task) *Task {
	c := *t
	return &c
}

// resolveProgram finds name in the policy's search path. Only a bare,
// allowlisted name is looked up, and only in the policy's directories.
func resolveProgram(p *Policy, name string) (string, error) {
	if err := checkProgramName(name); err != nil {
		return "", fmt.Errorf("program: %v: %w", err, ErrNotAllowed)
	}
	if !slices.Contains(p.Allow, name) {
		return "", fmt.Errorf("program %q: %w", name, ErrNotAllowed)
	}
	var notExec string
	dirs := p.SearchPath()
	for _, dir := range dirs {
		full := filepath.Join(dir, name)
		st, err := os.Stat(full)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 == 0 || unix.Access(full, unix.X_OK) != nil {
			if notExec == "" {
				notExec = full
			}
			continue
		}
		return full, nil
	}
	if notExec != "" {
		return "", fmt.Errorf("program %q: %s: %w", name, notExec, ErrNotExecutable)
	}
	return "", fmt.Errorf("program %q in %s: %w", name, strings.Join(dirs, ":"), ErrProgramNotFound)
}

// openDir opens the task's working directory beneath the workspace ws
// (whose canonical path is workspace). The
// child is later started in this very directory (through the descriptor),
// so a symlink swapped in after this check cannot redirect it.
func openDir(ws *os.File, workspace, rel string) (*os.File, string, error) {
	f, err := fsx.OpenBeneathDir(ws, rel, os.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, "", fmt.Errorf("task.dir: %w", classifyOpen(err))
	}
	real, err := fdPath(f)
	if err != nil {
		f.Close()
		return nil, "", exitcode.Field(exitcode.Internal, "task.dir", rel, "%w", err)
	}
	if !within(workspace, real) { // os.Root already guarantees it; belt and braces
		f.Close()
		return nil, "", exitcode.Field(exitcode.Refused, "task.dir", rel, "outside the workspace: %w", fsx.ErrEscape)
	}
	return f, real, nil
}

// confinesWrites: the backend confines the task's writes to its trees.
func confinesWrites(iso Isolation) bool {
	return iso == IsolationLandlock || iso == IsolationStrict || iso == IsolationSeatbelt
}

// wholeFilesystem refuses a writable tree that is / under a backend that
// confines writes: the run would be unconfined in all but name.
func wholeFilesystem(field, what, dir string, iso Isolation) error {
	return exitcode.Fieldf(exitcode.Refused, field, dir,
		"%s %s is the whole filesystem: isolation %s would leave every file writable (name the task's own directory)", what, dir, iso)
}

// openWritable resolves one of Options.Writable (an absolute path) once
// and opens it without following any symlink from then on.
func openWritable(dir string) (string, *os.File, error) {
	if !filepath.IsAbs(dir) {
		return "", nil, exitcode.Field(exitcode.Usage, "Options.Writable", dir, "not an absolute path")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil, exitcode.Field(exitcode.Usage, "Options.Writable", dir, "%w", err)
	}
	f, err := fsx.OpenDir(real)
	if err != nil {
		return "", nil, exitcode.Field(exitcode.Refused, "Options.Writable", dir, "%w", err)
	}
	return real, f, nil
}

// openContext opens one context file beneath the workspace and checks its
// size from the opened file's metadata before anything is read.
func openContext(ws *os.File, rel string, limit int64) (*os.File, error) {
	f, err := fsx.OpenBeneathDir(ws, rel, os.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("task.context: %w", classifyOpen(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, exitcode.Field(exitcode.Internal, "task.context", rel, "%w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, exitcode.Field(exitcode.Usage, "task.context", rel, "not a regular file")
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("task.context %s: %d bytes exceeds context_bytes %d: %w", rel, st.Size(), limit, ErrContextTooLarge)
	}
	return f, nil
}

// classifyOpen gives an open failure its exit code: escapes are refusals
// (126, already coded by fsx), a missing path is invalid input (2).
func classifyOpen(err error) error {
	switch {
	case errors.Is(err, fsx.ErrEscape):
		return err
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENAMETOOLONG), errors.Is(err, unix.EINVAL):
		return exitcode.Wrap(exitcode.Usage, err)
	case errors.Is(err, unix.ENOTDIR):
		return exitcode.Errorf(exitcode.Usage, "%w (not a directory)", err)
	case errors.Is(err, fs.ErrPermission):
		return exitcode.Wrap(exitcode.Refused, err)
	}
	return exitcode.Wrap(exitcode.Internal, err)
}

// buildEnv builds the child's environment from nothing: the allowed names
// that are set in environ, then the task's Set. The task's allow list
// defaults to the policy's; a name in it or in Set that the policy does
// not allow is refused, never silently dropped.
// lookupEnv is the value of name in environ; the last entry wins, as it
// would in a map built from environ.
func lookupEnv(environ []string, name string) (v string, ok bool) {
	for _, kv := range environ {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			v, ok = kv[len(name)+1:], true
		}
	}
	return v, ok
}

func buildEnv(p *Policy, t *Task, environ []string, dir, tmpdir string) ([]string, error) {
	allow := p.EnvAllow
	if t.Env.Allow != nil {
		for _, name := range t.Env.Allow {
			if !slices.Contains(p.EnvAllow, name) {
				return nil, fmt.Errorf("task.env.allow: %s: %w", name, ErrEnvNotAllowed)
			}
		}
		allow = t.Env.Allow
	}
	for _, name := range sortedKeys(t.Env.Set) {
		if !slices.Contains(p.EnvAllow, name) {
			return nil, fmt.Errorf("task.env.set: %s: %w", name, ErrEnvNotAllowed)
		}
	}
	// The allow list is short: look each name up in environ rather than
	// building a map of the whole environment for every run.
	vals := make(map[string]string, len(allow)+len(t.Env.Set)+1)
	for _, name := range allow {
		if v, ok := lookupEnv(environ, name); ok {
			vals[name] = v
		}
	}
	for k, v := range t.Env.Set {
		vals[k] = v
	}
	if _, ok := vals["PWD"]; ok {
		vals["PWD"] = dir // the only value that is not a lie
	}
	if tmpdir != "" {
		vals["TMPDIR"] = tmpdir // the one writable temp under landlock
	}
	env := make([]string, 0, len(vals))
	for _, k := range sortedKeys(vals) {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}
