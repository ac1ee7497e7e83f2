package execx

import (
	"context"
	"io"
	"os/exec"
	"syscall"
	"testing"
)

// BenchmarkRunTrue is the per-command cost of Run for /bin/true in each
// mode (-stderr: with a separate stderr pipe; -pooled: on a long-lived
// supervisor of a Pool, as the queue worker runs its tasks; landlock as
// root has a mount view and is not pooled); BenchmarkRawSpawn (os/exec,
// nothing else) is the baseline to divide by. Besides wall time it
// reports cpu-ns/op, the CPU of every process involved (this one and all
// it reaped: supervisors, stages, programs; a pool is closed before the
// count so its supervisors are in it). The shim is this test binary
// re-executed, heavier to start than the artexec-shim the tools use.
func BenchmarkRunTrue(b *testing.B) {
	cases := []struct {
		name   string
		iso    Isolation
		opt    Options
		pooled bool
	}{
		{"none", IsolationNone, Options{}, false},
		{"none-stderr", IsolationNone, Options{Stderr: io.Discard}, false},
		{"none-supervised", IsolationNone, Options{Supervised: true}, false},
		{"none-supervised-stderr", IsolationNone, Options{Supervised: true, Stderr: io.Discard}, false},
		{"none-pooled", IsolationNone, Options{Supervised: true}, true},
		{"none-pooled-stderr", IsolationNone, Options{Supervised: true, Stderr: io.Discard}, true},
		{"landlock", IsolationLandlock, Options{}, false},
		{"landlock-pooled", IsolationLandlock, Options{}, true},
		{"strict", IsolationStrict, Options{}, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.iso != IsolationNone && landlockABI() == 0 {
				b.Skip("no Landlock")
			}
			p := policyFor(b, c.iso, "true")
			task := NewTask("true")
			opt := c.opt
			if c.pooled {
				opt.Pool = NewPool(1)
			}
			cpu0 := cpuNS()
			for b.Loop() {
				res, err := Run(context.Background(), p, task, opt)
				if err != nil || res.Status != StatusSucceeded {
					b.Fatalf("Run = %v, %v", res, err)
				}
			}
			if opt.Pool != nil {
				opt.Pool.Close()
			}
			b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuNS is the user and system CPU of this process and of every child it
// reaped, in nanoseconds.
func cpuNS() int64 {
	var t int64
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			t += ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	return t
}

func BenchmarkRawSpawn(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
