//go:build linux

package filters

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
)

// onFilteredThread runs f on a thread of its own under the profile's
// filters; the thread is never unlocked, so the runtime destroys it after.
func onFilteredThread(t *testing.T, profile string, denyUnix bool, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- err
			return
		}
		progs, err := Programs(profile, denyUnix)
		if err == nil {
			err = stage.LoadSeccomp(progs)
		}
		if err != nil {
			done <- err
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSeccompSockets(t *testing.T) {
	tests := []struct {
		name                string
		domain, typ, proto  int
		landlock, strictErr bool
	}{
		{"tcp4", unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0, false, false},
		{"tcp6", unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP, false, false},
		{"udp", unix.AF_INET, unix.SOCK_DGRAM, 0, true, true},
		{"raw", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, true, true},
		{"netlink", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, true, true},
		{"packet", unix.AF_PACKET, unix.SOCK_RAW, 0, true, true},
		{"unix", unix.AF_UNIX, unix.SOCK_STREAM, 0, false, true},
		{"tcp as mptcp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, true, true},
	}
	for _, tt := range tests {
		for _, strict := range []bool{false, true} {
			want := tt.landlock
			if strict {
				want = tt.strictErr
			}
			onFilteredThread(t, stage.SeccompLandlock, strict, func() {
				fd, err := unix.Socket(tt.domain, tt.typ, tt.proto)
				if err == nil {
					unix.Close(fd)
				}
				if denied := errors.Is(err, unix.EPERM); denied != want {
					t.Errorf("%s (deny unix %v): socket() = %v; want denied %v", tt.name, strict, err, want)
				}
			})
		}
	}
}

// The rest of what the filters deny, tried for real on a filtered thread.
func TestSeccompDenies(t *testing.T) {
	tests := []struct {
		name string
		call func() error
		want unix.Errno
	}{
		{"TIOCSTI", func() error { return ioctl(unix.TIOCSTI) }, unix.EPERM},
		{"TIOCSTI with high bits", func() error { return ioctl(1<<32 | unix.TIOCSTI) }, unix.EPERM},
		{"TIOCLINUX", func() error { return ioctl(unix.TIOCLINUX) }, unix.EPERM},
		{"other ioctl passes", func() error { return ioctl(unix.TCGETS) }, unix.ENOTTY},
		{"ptrace", func() error { return unix.PtraceAttach(1) }, unix.EPERM},
		{"unshare user", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }, unix.EPERM},
		{"clone new user", func() error {
			// With CLONE_FS the kernel refuses it (EINVAL) if the filter
			// does not: never a real fork of the test.
			_, _, e := unix.RawSyscall(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS, 0, 0)
			return errnoErr(e)
		}, unix.EPERM},
		{"clone3", func() error { _, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0); return errnoErr(e) }, unix.ENOSYS},
		{"mount", func() error { return unix.Mount("none", "/mnt", "tmpfs", 0, "") }, unix.EPERM},
		{"kexec", func() error { _, _, e := unix.RawSyscall(unix.SYS_KEXEC_LOAD, 0, 0, 0); return errnoErr(e) }, unix.EPERM},
		{"init_module", func() error { _, _, e := unix.RawSyscall(unix.SYS_INIT_MODULE, 0, 0, 0); return errnoErr(e) }, unix.EPERM},
		{"io_uring", func() error { _, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, 0, 0); return errnoErr(e) }, unix.EPERM},
	}
	for _, tt := range tests {
		onFilteredThread(t, stage.SeccompStrict, true, func() {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
			}
		})
	}
}

// ioctl issues request req on /dev/null: not a terminal, so a request the
// filters let through fails with ENOTTY.
func ioctl(req uint64) error {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var b byte = 'x'
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&b)))
	return errnoErr(e)
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
