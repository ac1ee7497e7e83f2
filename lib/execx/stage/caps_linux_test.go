//go:build linux

package stage

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// capLine is the value of a Cap* line in status (a /proc status file).
func capLine(t *testing.T, status []byte, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `:\s*([0-9a-f]+)$`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no %s in\n%s", name, status)
	}
	return string(m[1])
}

// DropBoundingSet empties the calling thread's bounding set but keep, and
// a program that thread starts as root keeps every capability it had
// (root's execve gives the bounding set joined with the inheritable one,
// raised first) while its bounding set stays emptied; no other thread of
// the process is touched. The thread ends with its goroutine.
func TestDropBoundingSet(t *testing.T) {
	if os.Geteuid() != 0 || !HasCap(unix.CAP_SETPCAP) {
		t.Skip("needs root with CAP_SETPCAP")
	}
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	fullBnd, fullPrm := capLine(t, self, "CapBnd"), capLine(t, self, "CapPrm")
	type seen struct {
		thread, child []byte
		err           error
	}
	done := make(chan seen)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends here
		var s seen
		if s.err = DropBoundingSet(1 << unix.CAP_CHOWN); s.err == nil {
			if s.thread, s.err = os.ReadFile("/proc/thread-self/status"); s.err == nil {
				s.child, s.err = exec.Command("cat", "/proc/self/status").Output()
			}
		}
		done <- s
	}()
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	const chown = "0000000000000001"
	if got := capLine(t, s.thread, "CapBnd"); got != chown {
		t.Errorf("the thread's CapBnd %s; want %s", got, chown)
	}
	if got := capLine(t, s.child, "CapBnd"); got != chown {
		t.Errorf("its program's CapBnd %s; want %s", got, chown)
	}
	if got := capLine(t, s.child, "CapPrm"); got != fullPrm {
		t.Errorf("its program's CapPrm %s; want the thread's own, %s", got, fullPrm)
	}
	for range 4 { // other threads, and what they start, keep the whole set
		out, err := exec.Command("cat", "/proc/self/status").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := capLine(t, out, "CapBnd"); got != fullBnd {
			t.Errorf("a program started from another thread: CapBnd %s; want %s", got, fullBnd)
		}
	}
}
