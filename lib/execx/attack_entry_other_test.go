//go:build !linux

package execx

func helperEntry() (int, bool) { return 0, false }
