package termsig

import (
	"os"
	"os/signal"
	"syscall"
)

// notify is Catch by os/signal: where the handler of this package does
// not exist, or could not be installed.
func notify(ch chan os.Signal, sigs []syscall.Signal) func() {
	ss := make([]os.Signal, len(sigs))
	for i, s := range sigs {
		ss[i] = s
	}
	signal.Notify(ch, ss...)
	return func() { signal.Stop(ch) }
}
