package fsx

import (
	"os"
	"path/filepath"
)

// openBeneathPortable resolves symlinks and checks the result before opening.
// It is used where openat2 is missing; a symlink swapped in between the check
// and the open can win that race, which is why Linux does not use it.
func openBeneathPortable(root, rel string, flags int) (*os.File, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if err != nil {
		return nil, escapeOr(rel, err)
	}
	if !within(realRoot, real) {
		return nil, &PathError{Path: rel, Reason: "resolves outside the workspace"}
	}
	f, err := os.OpenFile(real, flags, 0)
	if err != nil {
		return nil, escapeOr(rel, err)
	}
	return f, nil
}
