//go:build !(linux && amd64)

package termsig

import (
	"os"
	"syscall"
)

func catch(ch chan os.Signal, sigs []syscall.Signal) func() { return notify(ch, sigs) }
