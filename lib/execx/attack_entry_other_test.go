//go:build !linux

package execx

func attackEntry() (int, bool) { return 0, false }
