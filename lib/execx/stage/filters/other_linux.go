//go:build linux && !amd64

package filters

import (
	"sync"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/execx/stage/filters/internal/compile"
)

var (
	compileMu sync.Mutex
	compiled  = map[bool][][]byte{}
)

// programs compiles them here, once per process: no table was generated
// for this architecture.
func programs(denyUnix bool) ([][]byte, error) {
	compileMu.Lock()
	defer compileMu.Unlock()
	if p, ok := compiled[denyUnix]; ok {
		return p, nil
	}
	p, err := compile.Compile(stage.SeccompLandlock, denyUnix)
	if err == nil {
		compiled[denyUnix] = p
	}
	return p, err
}
