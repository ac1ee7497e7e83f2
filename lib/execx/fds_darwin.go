//go:build darwin

package execx

// markCloexecFrom marks every open descriptor >= lo close-on-exec by
// walking /dev/fd (macOS has no close_range).
func markCloexecFrom(lo int) { markCloexecDir("/dev/fd", lo) }
