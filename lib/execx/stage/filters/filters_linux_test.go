//go:build linux

package filters

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// Another process's scheduling, I/O priority, affinity, nice and limits
// are refused; the calling thread's own (pid 0) pass. So is every mode
// with a set-user-ID or set-group-ID bit, and every other mode passes.
func TestSeccompSelfOnlyAndSetID(t *testing.T) {
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	pid := other.Process.Pid
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cpus); err != nil {
		t.Fatal(err)
	}
	var core unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &core); err != nil {
		t.Fatal(err)
	}
	param := func(p int) error {
		var prio int32
		_, _, e := unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(p), 0 /* SCHED_OTHER */, uintptr(unsafe.Pointer(&prio)))
		return errnoErr(e)
	}
	setparam := func(p int) error {
		var prio int32
		_, _, e := unix.RawSyscall(unix.SYS_SCHED_SETPARAM, uintptr(p), uintptr(unsafe.Pointer(&prio)), 0)
		return errnoErr(e)
	}
	attr := func(p int) error {
		return unix.SchedSetAttr(p, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 0 /* SCHED_OTHER */}, 0)
	}
	ioprio := func(which, who int) error {
		_, _, e := unix.RawSyscall(unix.SYS_IOPRIO_SET, uintptr(which), uintptr(who), 0)
		return errnoErr(e)
	}
	prlimit := func(p int, set bool) error {
		var old unix.Rlimit
		if set {
			return unix.Prlimit(p, unix.RLIMIT_CORE, &core, &old)
		}
		return unix.Prlimit(p, unix.RLIMIT_CORE, nil, &old)
	}
	open := func(name string, flags int, mode uint32) error {
		fd, err := unix.Open(filepath.Join(dir, name), flags|unix.O_CLOEXEC, mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	tests := []callCase{
		{"sched_setscheduler other", func() error { return param(pid) }, unix.EPERM},
		{"sched_setscheduler self", func() error { return param(0) }, nil},
		{"sched_setparam other", func() error { return setparam(pid) }, unix.EPERM},
		{"sched_setparam self", func() error { return setparam(0) }, nil},
		{"sched_setattr other", func() error { return attr(pid) }, unix.EPERM},
		{"sched_setattr self", func() error { return attr(0) }, nil},
		{"sched_setattr own pid", func() error { return attr(os.Getpid()) }, unix.EPERM},
		{"sched_setaffinity other", func() error { return unix.SchedSetaffinity(pid, &cpus) }, unix.EPERM},
		{"sched_setaffinity self", func() error { return unix.SchedSetaffinity(0, &cpus) }, nil},
		{"setpriority other", func() error { return unix.Setpriority(unix.PRIO_PROCESS, pid, 0) }, unix.EPERM},
		{"setpriority group", func() error { return unix.Setpriority(unix.PRIO_PGRP, 0, 19) }, unix.EPERM},
		{"setpriority user", func() error { return unix.Setpriority(unix.PRIO_USER, 0, 19) }, unix.EPERM},
		{"setpriority self", func() error {
			n, err := unix.Getpriority(unix.PRIO_PROCESS, 0) // 20-nice
			if err != nil {
				return err
			}
			return unix.Setpriority(unix.PRIO_PROCESS, 0, 20-n)
		}, nil},
		{"ioprio_set other", func() error { return ioprio(1, pid) }, unix.EPERM},
		{"ioprio_set group", func() error { return ioprio(2, 0) }, unix.EPERM},
		{"ioprio_set user", func() error { return ioprio(3, 0) }, unix.EPERM},
		{"ioprio_set self", func() error { return ioprio(1, 0) }, nil},
		{"prlimit64 set other", func() error { return prlimit(pid, true) }, unix.EPERM},
		{"prlimit64 read other", func() error { return prlimit(pid, false) }, nil},
		{"prlimit64 set self", func() error { return prlimit(0, true) }, nil},
		{"chmod setuid", func() error { return unix.Chmod(file, 0o4755) }, unix.EPERM},
		{"chmod setgid", func() error { return unix.Chmod(file, 0o2755) }, unix.EPERM},
		{"fchmodat setuid high bits", func() error {
			_, _, e := unix.RawSyscall6(unix.SYS_FCHMODAT, uintptr(dfd), uintptr(unsafe.Pointer(must(unix.BytePtrFromString("f")))), 1<<32|0o4755, 0, 0, 0)
			return errnoErr(e)
		}, unix.EPERM},
		{"chmod plain", func() error { return unix.Chmod(file, 0o1777) }, nil},
		{"fchmodat setuid", func() error { return unix.Fchmodat(dfd, "f", 0o4755, 0) }, unix.EPERM},
		{"fchmodat2 setgid", func() error {
			_, _, e := unix.RawSyscall6(unix.SYS_FCHMODAT2, uintptr(dfd), uintptr(unsafe.Pointer(must(unix.BytePtrFromString("f")))), 0o2755, 0, 0, 0)
			return errnoErr(e)
		}, unix.EPERM},
		{"fchmod setuid", func() error {
			fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Fchmod(fd, 0o4755)
		}, unix.EPERM},
		{"open creating setuid", func() error { return open("s1", unix.O_CREAT|unix.O_WRONLY, 0o4755) }, unix.EPERM},
		{"openat creating setgid", func() error {
			fd, err := unix.Openat(dfd, "s2", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, unix.EPERM},
		{"open O_TMPFILE setuid", func() error { return open("", unix.O_TMPFILE|unix.O_WRONLY, 0o4755) }, unix.EPERM},
		{"open existing, mode ignored", func() error { return open("f", unix.O_RDONLY, 0o4755) }, nil},
		{"open creating plain", func() error { return open("p", unix.O_CREAT|unix.O_WRONLY, 0o755) }, nil},
		{"mknodat setuid", func() error { return unix.Mknodat(dfd, "s4", unix.S_IFREG|0o4755, 0) }, unix.EPERM},
		{"openat2", func() error {
			_, err := unix.Openat2(dfd, "f", &unix.OpenHow{Flags: unix.O_RDONLY})
			return err
		}, unix.ENOSYS},
	}
	tests = append(tests, legacySetIDCalls(file, filepath.Join(dir, "s3"))...)
	for _, tt := range tests {
		onFilteredThread(t, stage.SeccompLandlock, false, func() {
			if err := tt.call(); !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
			}
		})
	}
	for _, name := range []string{"s1", "s2", "s3", "s4"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was created with a set-ID bit", name)
		}
	}
	if st, _ := os.Stat(file); st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("%s has mode %v: a set-ID bit got through", file, st.Mode())
	}
}

// callCase is one system call made on a filtered thread and the error the
// filter must give it (nil: allowed).
type callCase struct {
	name string
	call func() error
	want error
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
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
