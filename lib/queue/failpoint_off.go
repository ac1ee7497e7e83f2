//go:build !failpoint

package queue

const failpointsBuilt = false

// Failpoint does nothing: this binary was built without -tags failpoint
// (see failpoint.go).
func Failpoint(name string) {}

// TornWrite reports no torn write: this binary was built without -tags
// failpoint (see failpoint.go).
func TornWrite() (int64, bool) { return 0, false }
