// Package workspace is the confined editor: reads of existing regular files
// and exact single-occurrence text replacements, both beneath one root
// directory. The agent loop is its first user; nothing in it knows about
// agents.
//
// It refuses: absolute paths, ".." components, any path whose canonical
// target leaves the root (resolved component by component through os.Root,
// fsx.OpenBeneath, so a symlink swapped in after a check cannot escape),
// editing through a symbolic link, non-regular files, files over the size
// cap, an empty or missing old text, an old text that occurs more than once
// (overlapping occurrences included), an edit whose result exceeds the cap,
// and creating files. An edit keeps the file's mode (and owner where the
// process may set it), is written to a temporary file in the same directory,
// fsync'd, renamed over the target relative to the directory that was opened
// beneath the root, and the directory is fsync'd: after a crash the file
// holds either the old or the new bytes.
//
// It does not defend against a hard link that names a file outside the root
// (no confined open can tell one from an ordinary file): a read through it shows
// that file, while an edit replaces only the workspace's name and leaves the
// outside file unchanged. Extended attributes and ACLs are not copied.
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// DefaultMaxFileBytes bounds both what a read returns and how large a file
// may be before and after an edit.
const DefaultMaxFileBytes = 1 << 20

// Refusals. Policy refusals carry exit code 126, a missing file 4, and an
// edit request that cannot be applied as asked 2. Escapes wrap fsx.ErrEscape.
var (
	ErrNotRegular = exitcode.Sentinel(exitcode.Refused, "not a regular file")
	ErrTooLarge   = exitcode.Sentinel(exitcode.Refused, "file too large")
	ErrSymlink    = exitcode.Sentinel(exitcode.Refused, "is a symbolic link: edit the file it points to")
	ErrNotExist   = exitcode.Sentinel(exitcode.NotFound, "no such file")
	ErrEmptyOld   = exitcode.Sentinel(exitcode.Usage, "old text is empty")
	ErrNoMatch    = exitcode.Sentinel(exitcode.Usage, "old text not found")
	ErrAmbiguous  = exitcode.Sentinel(exitcode.Usage, "old text occurs more than once")
	ErrChanged    = exitcode.Sentinel(exitcode.Conflict, "file changed while it was being edited")
)

// Error is a refused or failed read or edit: the operation, the path as the
// caller gave it, and why.
type Error struct {
	Op     string // "read" or "edit"
	Path   string
	Err    error
	Detail string // optional, appended after Err's message
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s: %v", e.Op, quote(e.Path), errMsg(e.Err))
	if e.Detail != "" {
		msg += "; " + e.Detail
	}
	return msg
}

// Unwrap exposes the sentinel (or fsx.ErrEscape, or the I/O error).
func (e *Error) Unwrap() error { return e.Err }

// errMsg drops the repeated path fsx puts in front of its reasons.
func errMsg(err error) string {
	var pe *fsx.PathError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	var ope *os.PathError
	if errors.As(err, &ope) {
		return ope.Err.Error()
	}
	return err.Error()
}

func quote(p string) string {
	for _, r := range p {
		if r < ' ' || r == ' ' || r == 0x7f {
			return fmt.Sprintf("%q", p)
		}
	}
	if p == "" {
		return `""`
	}
	return p
}

// Editor reads and edits files beneath one root. It is safe for concurrent
// use; concurrent edits of one file are serialised only by the final rename
// (a lost update is detected when the file's size or mtime changed between
// read and rename).
type Editor struct {
	root    string
	maxFile int64
}

// Options tune an Editor. Zero values mean the defaults.
type Options struct {
	// MaxFileBytes caps the size of a file that is read or edited, and the
	// size of an edit's result.
	MaxFileBytes int64
}

// New returns an editor confined to root, which must be an existing
// directory. The root's own symlinks are resolved once, here: the operator
// chose it.
func New(root string, opt Options) (*Editor, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.NotFound, fmt.Errorf("workspace %s: %w", root, errors.Unwrap(err)))
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, exitcode.Field(exitcode.Usage, "Root", root, "not a directory")
	}
	e := &Editor{root: real, maxFile: opt.MaxFileBytes}
	if e.maxFile <= 0 {
		e.maxFile = DefaultMaxFileBytes
	}
	return e, nil
}

// Root is the canonical absolute root.
func (e *Editor) Root() string { return e.root }

// MaxFileBytes is the size cap in force.
func (e *Editor) MaxFileBytes() int64 { return e.maxFile }
