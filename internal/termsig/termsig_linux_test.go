package termsig

import (
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// TestCatchBusy delivers signals to every thread of a process whose
// goroutines are allocating and growing stacks, so that handlers
// interrupt Go code, the runtime and system calls alike: each signal
// arrives and nothing the Go code computes is disturbed.
func TestCatchBusy(t *testing.T) {
	c, stop := Catch(syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if got := deep(200); got != 200*201/2 {
					t.Errorf("deep(200) = %d; want %d", got, 200*201/2)
					return
				}
				_ = make([]byte, 1<<12)
			}
		}()
	}
	for range 20 {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip("no /proc/self/task")
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		want(t, c, syscall.SIGTERM)
		for _, e := range tids { // one thread at a time: each handles one
			var tid int
			for _, ch := range e.Name() {
				tid = tid*10 + int(ch-'0')
			}
			if syscall.Tgkill(os.Getpid(), tid, syscall.SIGTERM) == nil {
				want(t, c, syscall.SIGTERM)
			}
		}
		runtime.Gosched()
	}
	close(done)
	wg.Wait()
}

//go:noinline
func deep(n int) int {
	var pad [64]byte
	if n == 0 {
		return int(pad[0])
	}
	return n + deep(n-1) + int(pad[n%64])
}
