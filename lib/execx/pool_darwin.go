package execx

import "os"

// poolState: macOS has no supervisor, nothing to keep.
type poolState struct{ size int }

// Close does nothing on macOS.
func (p *Pool) Close() {}

// putTmpdir removes the temp dir: nothing is kept on macOS.
func (p *Pool) putTmpdir(path string, f *os.File, _ bool) {
	_ = os.RemoveAll(path)
	f.Close()
}
