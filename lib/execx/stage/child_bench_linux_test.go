//go:build linux

package stage_test

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/execx/stage/filters"
)

// BenchmarkChildSteps is the floor of a pooled landlock task's start: the
// child (start /bin/true, wait for it) with the mandatory steps added one
// at a time, in the order the child applies them, so each step's cost is
// the difference to the row before (3a, a one-instruction filter in
// place of the profile's, is what loading any filter costs) — in the kernel, where the step runs,
// and in what the process's exit then has to undo (a mount namespace to
// tear down, a seccomp filter and Landlock domain to free). The variants
// are interleaved (each iteration starts one child of every variant), and
// each one's CPU is its own: the calling thread's from NewChild to the
// reaped child (RUSAGE_THREAD) plus the child's (wait4's rusage), as
// <variant>-cpu-µs/op. The view needs root with CAP_SYS_ADMIN; without it
// that row is left out.
//
//	go test -run NONE -bench ChildSteps -count 5 ./lib/execx/stage
func BenchmarkChildSteps(b *testing.B) {
	fd := devNull(b)
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		b.Fatal(err)
	}
	held, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(held)
	progs, err := filters.Programs(stage.SeccompLandlock, false)
	if err != nil {
		b.Fatal(err)
	}
	abi := stage.LandlockABI()
	if abi == 0 {
		b.Skip("no Landlock")
	}
	nnp := func(s *stage.Spec) { s.NNP = true }
	landlock := func(s *stage.Spec) { s.Landlock, s.RW, s.RWFDs = abi, []string{dir}, []int{held} }
	seccomp := func(s *stage.Spec) { s.Filters = progs }
	// One instruction, SECCOMP_RET_ALLOW: what loading any filter costs,
	// against what the profile's programs (their length and shape) cost.
	allowAll := func(s *stage.Spec) { s.Filters = [][]byte{{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}} }
	caps := func(s *stage.Spec) { s.DropCaps = true }
	type variant struct {
		name  string
		apply []func(*stage.Spec)
		view  bool
	}
	steps := []variant{
		{"0-bare", nil, false},
		{"1-nnp", []func(*stage.Spec){nnp}, false},
		{"2-landlock", []func(*stage.Spec){nnp, landlock}, false},
		{"3-seccomp", []func(*stage.Spec){nnp, landlock, seccomp}, false},
		{"3a-seccomp-allow-all", []func(*stage.Spec){nnp, landlock, allowAll}, false},
		{"4-caps", []func(*stage.Spec){nnp, landlock, seccomp, caps}, false},
	}
	if os.Geteuid() == 0 && stage.HasCap(unix.CAP_SYS_ADMIN) {
		steps = append(steps, variant{"5-view", []func(*stage.Spec){nnp, landlock, seccomp, caps}, true})
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := make([]int64, len(steps))
	for b.Loop() {
		for i := range steps {
			spec := &stage.Spec{Path: "/bin/true", Argv: []string{"true"}}
			for _, f := range steps[i].apply {
				f(spec)
			}
			var t0, t1 unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &t0)
			c, err := stage.NewChild(spec, [3]int{fd, fd, fd}, -1)
			if err != nil {
				b.Fatal(err)
			}
			if steps[i].view {
				if err := c.InView(&stage.View{ReadOnly: true, RW: []string{dir}, Cwd: wd}, []int{held}); err != nil {
					b.Fatal(err)
				}
			}
			pid, err := c.Start()
			if err != nil {
				b.Fatal(err)
			}
			var ws unix.WaitStatus
			var ru unix.Rusage
			if _, err := unix.Wait4(pid, &ws, 0, &ru); err != nil || ws.ExitStatus() != 0 {
				b.Fatalf("true: %v, status %v", err, ws)
			}
			c.Close()
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &t1)
			cpu[i] += tvUS(t1.Utime) + tvUS(t1.Stime) - tvUS(t0.Utime) - tvUS(t0.Stime) + tvUS(ru.Utime) + tvUS(ru.Stime)
		}
	}
	for i, s := range steps {
		b.ReportMetric(float64(cpu[i])/float64(b.N), s.name+"-cpu-µs/op")
	}
}

func tvUS(t unix.Timeval) int64 { return t.Sec*1e6 + t.Usec }

// devNull is a descriptor of /dev/null for the children's 0-2, closed
// with the benchmark.
func devNull(b *testing.B) int {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { null.Close() })
	return int(null.Fd())
}

// The start of /bin/true by the child (clone that copies the parent's
// page tables, then execve) against syscall.ForkExec (vfork-style clone
// sharing the parent's memory until execve), both waited for: what the
// copy costs a process of this size. go test -run NONE -bench Start ./lib/execx/stage
func BenchmarkStart(b *testing.B) {
	fd := devNull(b)
	b.Run("child", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for b.Loop() {
			c, err := stage.NewChild(&stage.Spec{Path: "/bin/true", Argv: []string{"true"}}, [3]int{fd, fd, fd}, -1)
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
