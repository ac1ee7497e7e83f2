//go:build linux

package execx

import (
	"fmt"
	"os"
	"path/filepath"
)

// helperEntry runs this test binary as the attack program, as a runner
// under attack, or as TestOwnCgroupByHandle's or TestNofileRoutesAgree's
// child, when it was started as one.
func helperEntry() (int, bool) {
	if filepath.Base(os.Args[0]) == attackName {
		return attackMain(os.Args[1:]), true
	}
	if cfg := os.Getenv("EXECX_ATTACK_RUNNER"); cfg != "" {
		return attackRunnerMain(cfg), true
	}
	if os.Getenv("EXECX_TEST_OWN_CGROUP") != "" {
		return printOwnCgroup(), true
	}
	if os.Getenv("EXECX_TEST_NOFILE") != "" {
		soft, known := nofileAtStart()
		fmt.Printf("%d %v %d\n", soft, known, probeNofile())
		return 0, true
	}
	return 0, false
}
