//go:build linux

package execx

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkNofileProbe is what learning the caller's soft open-files limit
// costs (probeNofile: the shim started stopped by ptrace at its execve,
// read and killed), paid once per runner process when Go raised the
// limit. The soft limit is set one below the hard one first, so the probe
// runs. go test -run NONE -bench NofileProbe ./lib/execx
func BenchmarkNofileProbe(b *testing.B) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil || old.Max < 2 {
		b.Skip("no open-files limit to lower")
	}
	lim := unix.Rlimit{Cur: old.Max - 1, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		b.Skip(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	cpu0 := cpuNS()
	for b.Loop() {
		probeNofile()
	}
	b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTaskCgroup is what a task's own cgroup adds to a start: the
// same fork+exec+wait of /bin/true, plain and into a cgroup made for it
// (newTaskCgroup: mkdir, open, the cgroup.kill check; clone3 with
// CLONE_INTO_CGROUP; after the exit, the members read as the cleanup
// does, and rmdir). CPU is this process's and its children's, per start.
// go test -run NONE -bench TaskCgroup ./lib/execx
func BenchmarkTaskCgroup(b *testing.B) {
	if !cgroupUsable() {
		b.Skip("the runner cannot make cgroups here")
	}
	spawn := func(b *testing.B, sys *syscall.SysProcAttr) {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: sys})
		if err != nil {
			b.Fatal(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			b.Fatal(err, ws)
		}
	}
	b.Run("plain", func(b *testing.B) {
		cpu0 := cpuNS()
		for b.Loop() {
			spawn(b, nil)
		}
		b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("own-cgroup", func(b *testing.B) {
		cpu0 := cpuNS()
		for b.Loop() {
			cg := newTaskCgroup()
			if cg == nil {
				b.Fatal("no cgroup")
			}
			spawn(b, &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.fd})
			if cg.kill() != 0 {
				b.Fatal("members left")
			}
			cg.remove()
		}
		b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/op")
	})
}
