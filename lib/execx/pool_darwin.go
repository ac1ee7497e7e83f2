package execx

// poolState: macOS has no supervisor, nothing to keep.
type poolState struct{ size int }

// Close does nothing on macOS.
func (p *Pool) Close() {}
