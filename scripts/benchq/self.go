package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// self runs ARGV and prints one line, wall_s self_cpu_s children_cpu_s:
// the command's own CPU (utime+stime of all its threads) apart from what
// it waited for (cutime+cstime: its per-task processes and theirs). Both
// are read from /proc/PID/stat of the exited command before it is reaped
// (waitid with WNOWAIT leaves it a zombie whose stat still holds them), the
// one moment both are final. USER_HZ resolution (10 ms): time whole drains.
func self(args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return fmt.Errorf("no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	const pPID, wExited, wNoWait = 1, 4, 0x1000000
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		break
	}
	wall := time.Since(t0).Seconds()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return fmt.Errorf("/proc stat: %d fields", len(f))
	}
	t := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / clockTicks }
	fmt.Printf("%.6f %.3f %.3f\n", wall, t(11)+t(12), t(13)+t(14))
	return nil
}
