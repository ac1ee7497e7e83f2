//go:build linux

package stage

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The start of /bin/true by the child (clone that copies the parent's
// page tables, then execve) against syscall.ForkExec (vfork-style clone
// sharing the parent's memory until execve), both waited for: what the
// copy costs a process of this size. go test -run NONE -bench Start ./lib/execx/stage
func BenchmarkStart(b *testing.B) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	fd := int(null.Fd())
	b.Run("child", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for b.Loop() {
			c, err := NewChild(&Spec{Path: "/bin/true", Argv: []string{"true"}}, [3]int{fd, fd, fd}, -1)
			if err != nil {
				b.Fatal(err)
			}
			pid, err := c.Start()
			if err != nil {
				b.Fatal(err)
			}
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		}
	})
	b.Run("forkexec", func(b *testing.B) {
		for b.Loop() {
			pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{
				Files: []uintptr{uintptr(fd), uintptr(fd), uintptr(fd)},
				Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
			})
			if err != nil {
				b.Fatal(err)
			}
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		}
	})
}
