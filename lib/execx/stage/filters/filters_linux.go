//go:build linux

package filters

import (
	"fmt"

	"github.com/art-runtime/art/lib/execx/stage"
)

// Programs returns the profile's filters in the order they are
// installed (one program: see package compile). Both profiles share them;
// strict differs by denyUnix, decided by the caller. The slices are
// shared: callers must not modify them.
func Programs(profile string, denyUnix bool) ([][]byte, error) {
	switch profile {
	case stage.SeccompLandlock, stage.SeccompStrict:
	default:
		return nil, fmt.Errorf("unknown seccomp profile %q", profile)
	}
	return programs(denyUnix)
}
