//go:build linux

package execx

import (
	"os"
	"path/filepath"
)

// attackEntry runs this test binary as the attack program or as a runner
// under attack, when it was started as one.
func attackEntry() (int, bool) {
	if filepath.Base(os.Args[0]) == attackName {
		return attackMain(os.Args[1:]), true
	}
	if cfg := os.Getenv("EXECX_ATTACK_RUNNER"); cfg != "" {
		return attackRunnerMain(cfg), true
	}
	return 0, false
}
