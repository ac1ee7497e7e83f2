package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func nowSeconds() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// measure runs ARGV -procs times at once and prints its wall time and CPU:
// the children's (getrusage of waited children: they and everything they
// waited for, the per-task processes included) plus the growth of each
// server's process tree (/proc: every process under the server's pid, and
// what they have waited for, such as PostgreSQL's exited backends).
func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ExitOnError)
	servers := fs.String("servers", "", "comma-separated server pids whose process trees' CPU counts too")
	procs := fs.Int("procs", 1, "copies of the command to run at once")
	stdin := fs.String("stdin", "", "file to give the command on its stdin")
	_ = fs.Parse(args)
	argv := fs.Args()
	if len(argv) == 0 {
		return fmt.Errorf("no command")
	}
	var roots []int
	for _, s := range strings.Split(*servers, ",") {
		if s == "" {
			continue
		}
		pid, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-servers: %q is not a pid", s)
		}
		roots = append(roots, pid)
	}
	var before syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before); err != nil {
		return err
	}
	srv0, err := treeCPU(roots)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, *procs)
	for i := range *procs {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = nil, os.Stderr
		if *stdin != "" {
			f, err := os.Open(*stdin)
			if err != nil {
				return err
			}
			defer f.Close()
			cmd.Stdin = f
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Wait()
		}()
	}
	wg.Wait()
	wall := time.Since(t0).Seconds()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
	}
	srv1, err := treeCPU(roots)
	if err != nil {
		return err
	}
	var after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after); err != nil {
		return err
	}
	client := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	server := srv1 - srv0
	fmt.Printf("%.6f %.6f %.6f %.6f\n", wall, client+server, client, server)
	return nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// treeCPU sums utime, stime, cutime and cstime over every process under
// (and including) the roots.
func treeCPU(roots []int) (float64, error) {
	if len(roots) == 0 {
		return 0, nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	parent := map[int]int{}
	cpu := map[int]float64{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ... : comm may hold spaces; cut after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// f[0] state, f[1] ppid, f[11..14] utime stime cutime cstime.
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		var t float64
		for _, k := range f[11:15] {
			v, _ := strconv.ParseFloat(k, 64)
			t += v
		}
		cpu[pid] = t / clockTicks
	}
	in := map[int]bool{}
	for _, r := range roots {
		if _, ok := cpu[r]; !ok {
			return 0, fmt.Errorf("server pid %d: not running", r)
		}
		in[r] = true
	}
	var sum float64
	for pid := range cpu {
		for p, hops := pid, 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if in[p] {
				sum += cpu[pid]
				break
			}
		}
	}
	return sum, nil
}
