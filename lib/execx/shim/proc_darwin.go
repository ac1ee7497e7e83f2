//go:build darwin

package shim

// ChildrenOf: macOS has no /proc; execx does not need the tree there.
func ChildrenOf(int) []int { return nil }

// Descendants: see ChildrenOf.
func Descendants(int) []int { return nil }
