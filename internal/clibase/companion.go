package clibase

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Companion is the path of a helper program a tool runs instead of linking
// what it needs (artobs serve runs artobs-web; artq and artagent export
// OpenTelemetry through artobs-otlp): the one installed beside the running
// executable (symlinks resolved), so a tool runs the helper of its own
// build, else the first one on PATH. The error names the helper and where
// it was looked for, and wraps fs.ErrNotExist.
func Companion(name string) (string, error) {
	where := "the running executable"
	if exe, err := os.Executable(); err == nil {
		if p, err := filepath.EvalSymlinks(exe); err == nil {
			exe = p
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
		where = filepath.Dir(exe)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s: %w in %s nor on PATH", name, fs.ErrNotExist, where)
}
