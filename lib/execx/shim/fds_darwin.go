//go:build darwin

package shim

// MarkCloexecFrom marks every open descriptor >= lo close-on-exec by
// walking /dev/fd (macOS has no close_range).
func MarkCloexecFrom(lo int) { MarkCloexecDir("/dev/fd", lo) }
