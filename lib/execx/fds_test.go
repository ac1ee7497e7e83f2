//go:build linux

package execx

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
)

// lsFDs lists the task's own descriptors on one line: "0 1 2 3 " when it
// holds only 0-2 (3 is ls's own directory descriptor).
const (
	lsFDs   = `ls /proc/self/fd | tr '\n' ' '; echo`
	onlyStd = "0 1 2 3 \n"
)

// leakyFDs opens descriptors without close-on-exec, as a runner's parent
// or a raw syscall leaves them: a dup of a pipe's write end (a leaked
// write end keeps a reader from ever seeing EOF), and /dev/null opened
// with syscall.Open and moved to 200, far above the runner's own. It
// checks they really lack the flag, so a test using them can fail, and
// returns them and the pipe's read end.
func leakyFDs(t *testing.T) (fds []int, r *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	dup, err := unix.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(null, 200, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(null)
	fds = []int{dup, 200}
	t.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	for _, fd := range fds {
		if cloexec(t, fd) {
			t.Fatalf("fd %d is close-on-exec already: the test would prove nothing", fd)
		}
	}
	return fds, r
}

func cloexec(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatalf("fcntl(%d, F_GETFD): %v", fd, err)
	}
	return flags&unix.FD_CLOEXEC != 0
}

// A task holds fds 0-2 and nothing else, in every start mode, with and
// without a separate stderr, even when the runner holds descriptors
// without close-on-exec; those stay open and usable in the runner.
func TestNoInheritedFDs(t *testing.T) {
	for _, m := range startModes {
		for _, sep := range []bool{false, true} {
			name := m.name
			if sep {
				name += "+stderr"
			}
			t.Run(name, func(t *testing.T) {
				p, task := m.setup(t, lsFDs)
				fds, r := leakyFDs(t)
				opt := m.opt
				errs := &lockedBuf{}
				if sep {
					opt.Stderr = errs
				}
				res := mustRun(t, p, task, opt)
				if res.Status != StatusSucceeded || res.Output != onlyStd || errs.String() != "" {
					t.Errorf("status %s, task's fds %q, stderr %q; want succeeded, %q", res.Status, res.Output, errs.String(), onlyStd)
				}
				for _, fd := range fds {
					if !cloexec(t, fd) {
						t.Errorf("fd %d still lacks close-on-exec after Run", fd)
					}
				}
				// Marked, not closed: the write end still reaches the reader.
				if _, err := unix.Write(fds[0], []byte("x")); err != nil {
					t.Fatalf("write to the runner's own fd %d after Run: %v", fds[0], err)
				}
				b := make([]byte, 1)
				if n, err := r.Read(b); n != 1 || b[0] != 'x' {
					t.Errorf("read back %q, %v; want x", b[:n], err)
				}
			})
		}
	}
}

// Each shim marks everything above 2 close-on-exec itself, so a
// descriptor the runner's sweep missed (one made by another goroutine
// between the sweep and the fork) still never reaches the program.
// Without the runner's sweep a directly started task (macOS without
// rlimits: on Linux every task has a supervisor) does get it: that is the
// leak the sweep closes, and proof this test sees one.
func TestShimSweepStandsAlone(t *testing.T) {
	saved := sweepFDs
	sweepFDs = func() {}
	t.Cleanup(func() { sweepFDs = saved })
	for _, m := range startModes {
		t.Run(m.name, func(t *testing.T) {
			p, task := m.setup(t, lsFDs)
			fds, _ := leakyFDs(t)
			res := mustRun(t, p, task, m.opt)
			shim := runtime.GOOS == "linux" || m.rlimits || m.opt.Supervised || m.strict
			if shim && res.Output != onlyStd {
				t.Errorf("task's fds %q; want %q: the shim passed on what the runner leaked", res.Output, onlyStd)
			}
			if !shim {
				for _, fd := range fds {
					if !strings.Contains(" "+res.Output, " "+strconv.Itoa(fd)+" ") {
						t.Errorf("task's fds %q lack the runner's fd %d: with no sweep and no shim it must leak, or this test sees nothing", res.Output, fd)
					}
				}
			}
		})
	}
}

// Every way of marking works on its own, marks from lo up and leaves
// what is below alone: close_range, the /proc/self/fd walk and the
// last-resort loop over every descriptor (a directory that does not
// exist makes the walk fall back to it).
func TestMarkCloexec(t *testing.T) {
	for _, c := range []struct {
		name string
		mark func(lo int)
	}{
		{"close_range", shim.MarkCloexecFrom},
		{"proc walk", func(lo int) { shim.MarkCloexecDir("/proc/self/fd", lo) }},
		{"no dir", func(lo int) { shim.MarkCloexecDir("/nonexistent/fd", lo) }},
		{"every fd", shim.MarkCloexecUpTo},
	} {
		t.Run(c.name, func(t *testing.T) {
			fds, _ := leakyFDs(t)
			below := fds[0] // the dup: a low number
			c.mark(below + 1)
			if cloexec(t, below) {
				t.Errorf("fd %d below lo %d was marked", below, below+1)
			}
			if !cloexec(t, 200) {
				t.Errorf("fd 200 was not marked from lo %d", below+1)
			}
			c.mark(3)
			if !cloexec(t, below) {
				t.Errorf("fd %d was not marked from lo 3", below)
			}
		})
	}
}

// BenchmarkSweepFDs is the runner's per-start sweep with few and with a
// thousand descriptors open, by close_range and by the /proc walk it
// falls back to; compare with BenchmarkRunTrue.
func BenchmarkSweepFDs(b *testing.B) {
	for _, open := range []int{0, 1000} {
		var extra []int
		for range open {
			fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			extra = append(extra, fd)
		}
		b.Run("close_range/"+strconv.Itoa(open), func(b *testing.B) {
			for b.Loop() {
				shim.MarkCloexecFrom(3)
			}
		})
		b.Run("proc/"+strconv.Itoa(open), func(b *testing.B) {
			for b.Loop() {
				shim.MarkCloexecDir("/proc/self/fd", 3)
			}
		})
		for _, fd := range extra {
			unix.Close(fd)
		}
	}
}
