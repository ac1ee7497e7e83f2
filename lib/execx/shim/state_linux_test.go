//go:build linux

package shim

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// keepStatus keeps exactly the lines statusFields name, whole, in the
// file's order, the last one given its newline.
func TestKeepStatus(t *testing.T) {
	r := &stateReader{}
	in := "Name:\tx\nUmask:\t0022\nState:\tS\nSeccomp:\t0\nSeccomp_filters:\t0\nVmRSS:\t1 kB\nSigBlk:\t0000000000000000\nNSpid:\t7"
	want := "Umask:\t0022\nSeccomp:\t0\nSeccomp_filters:\t0\nSigBlk:\t0000000000000000\nNSpid:\t7\n"
	if got := r.keepStatus([]byte(in)); got != want {
		t.Errorf("keepStatus = %q; want %q", got, want)
	}
	if got := r.keepStatus([]byte("VmRSS:\t1 kB\n")); got != "" {
		t.Errorf("keepStatus of no kept line = %q", got)
	}
}

// A snapshot compares equal to the next one while nothing changes, and
// unequal after each change a task could make to its supervisor from
// outside or that a later task would inherit — made here by the process
// itself, on the thread the snapshots are taken on, and undone after.
func TestStateSnapshotSeesChanges(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newStateReader()
	base := r.read()
	if again := r.read(); !again.same(&base) {
		t.Fatalf("two snapshots with nothing changed differ:\n%+v\n%+v", base, again)
	}
	tid := unix.Gettid()
	umask := unix.Umask(0)
	unix.Umask(umask)
	type change struct {
		name         string
		change, undo func() error
	}
	changes := []change{
		{"umask", func() error { unix.Umask(umask ^ 0o001); return nil }, func() error { unix.Umask(umask); return nil }},
		{"signal mask", func() error {
			return unix.PthreadSigmask(unix.SIG_BLOCK, &unix.Sigset_t{Val: [16]uint64{1 << (unix.SIGWINCH - 1)}}, nil)
		}, func() error {
			return unix.PthreadSigmask(unix.SIG_UNBLOCK, &unix.Sigset_t{Val: [16]uint64{1 << (unix.SIGWINCH - 1)}}, nil)
		}},
		{"rlimit", func() error {
			lim := base.rlimits[unix.RLIMIT_NOFILE]
			lim.Cur--
			return unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		}, func() error {
			lim := base.rlimits[unix.RLIMIT_NOFILE]
			return unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		}},
		{"timer slack", func() error { return unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(base.timerslack)+1000, 0, 0, 0) },
			func() error { return unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(base.timerslack), 0, 0, 0) }},
		{"working directory", func() error { return os.Chdir(t.TempDir()) }, func() error { return os.Chdir(base.cwd) }},
	}
	if os.Geteuid() == 0 { // only root may take a raised nice value back
		changes = append(changes, change{"nice",
			func() error { return unix.Setpriority(unix.PRIO_PROCESS, tid, int(int32(base.thread.sched.Nice))+1) },
			func() error { return unix.Setpriority(unix.PRIO_PROCESS, tid, int(int32(base.thread.sched.Nice))) }})
	}
	for _, c := range changes {
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		changed := r.read()
		if err := c.undo(); err != nil {
			t.Fatalf("%s: undo: %v", c.name, err)
		}
		if changed.same(&base) {
			t.Errorf("%s changed: the snapshot still compares equal", c.name)
		}
		if back := r.read(); !back.same(&base) {
			t.Errorf("%s undone: the snapshot still differs", c.name)
		}
	}
}
