package fsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/art-runtime/art/lib/exitcode"
)

// ErrEscape is wrapped by every refusal of a path that is not a plain relative
// path staying under its root. It carries exit code 126 (refused by policy).
var ErrEscape = exitcode.Sentinel(exitcode.Refused, "path outside the workspace")

// PathError names the offending path and why it was refused.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("%s: %s", quotePath(e.Path), e.Reason) }

// Unwrap lets callers test errors.Is(err, ErrEscape).
func (e *PathError) Unwrap() error { return ErrEscape }

func quotePath(p string) string {
	if p == "" || strings.ContainsAny(p, "\x00\n\t ") {
		return fmt.Sprintf("%q", p)
	}
	return p
}

// CheckRel refuses, lexically, anything that is not a plain relative path:
// empty, absolute, containing a NUL byte, or with a ".." component. "." is
// allowed and means the root itself. It is the cheap first gate; OpenBeneath
// is the one that resolves symlinks.
func CheckRel(p string) error {
	switch {
	case p == "":
		return &PathError{Path: p, Reason: "empty path"}
	case strings.ContainsRune(p, 0):
		return &PathError{Path: p, Reason: "path contains a NUL byte"}
	case filepath.IsAbs(p):
		return &PathError{Path: p, Reason: "absolute path not allowed"}
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return &PathError{Path: p, Reason: "parent directory component not allowed"}
		}
	}
	return nil
}

// OpenBeneath opens rel under root so that neither "..", an absolute symlink,
// nor a symlink swapped in after any earlier check can leave root. It is the
// one confinement mechanism of art, os.Root (the worker's workspace copies
// use os.Root directly): each component is opened relative to the
// descriptor of the one before, without following symlinks, and a symlink
// is resolved in user space and refused if it leads out, so the check and
// the open are the same steps and there is no window to race, on every
// Unix alike. flags are os.OpenFile flags; O_CREAT is refused as a policy
// of its own (no new files through a confined open), and so is any ".."
// component (CheckRel), even one that would stay beneath root.
func OpenBeneath(root, rel string, flags int) (*os.File, error) {
	if err := CheckRel(rel); err != nil {
		return nil, err
	}
	if flags&os.O_CREATE != 0 {
		return nil, &PathError{Path: rel, Reason: "creating files is not allowed"}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close() // the file opened through it stays open
	f, err := r.OpenFile(rel, flags, 0)
	if err != nil {
		return nil, rootErr(rel, err)
	}
	return f, nil
}

// errPathEscapes is the error os.Root returns for a path that leads out of
// it. The standard library does not export it; provoking it once ("..")
// gives the value itself, so errors.Is keeps working if its text changes.
var errPathEscapes = sync.OnceValue(func() error {
	r, err := os.OpenRoot(string(os.PathSeparator))
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Open("..")
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
})

// rootErr turns an os.Root error into a PathError (an escape) or the
// cause wrapped with rel.
func rootErr(rel string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case err == errPathEscapes() && err != nil:
		return &PathError{Path: rel, Reason: "resolves outside the workspace"}
	case errors.Is(err, syscall.ELOOP):
		return &PathError{Path: rel, Reason: "symbolic link loop"}
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %w", rel, os.ErrNotExist)
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// ResolveBeneath returns the canonical absolute path of rel under root, after
// proving with OpenBeneath that the target exists and stays under root. The
// returned path is what a child process is given as its working directory.
func ResolveBeneath(root, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", root, err)
	}
	f, err := OpenBeneath(realRoot, rel, os.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	if !within(realRoot, real) {
		return "", &PathError{Path: rel, Reason: "resolves outside the workspace"}
	}
	return real, nil
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(root, string(os.PathSeparator))+string(os.PathSeparator))
}
