//go:build !linux

package fsx

import "os"

func openBeneath(root, rel string, flags int) (*os.File, error) {
	return openBeneathPortable(root, rel, flags)
}
