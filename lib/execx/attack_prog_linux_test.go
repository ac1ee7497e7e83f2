//go:build linux

package execx

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The attack program is this test binary started as attackName (a link
// in a directory of its own, the only one in the policy's path): a real
// hostile task, run by a real runner, doing from inside what an attacker
// would. Each attack prints "ATTACK name ok" when its system calls
// succeeded, or "ATTACK name blocked: error"; the test also looks from
// outside for the effect where one can be seen.
const attackName = "execx-attack"

// attackTargets is what the attacks aim at, handed to the task as one
// JSON argument (pids, paths and ports of things the test set up outside).
type attackTargets struct {
	Runner   int    `json:"runner"`
	Canary   uint64 `json:"canary"`  // address of runnerCanary in the runner
	File     string `json:"file"`    // a file outside the workspace, owned by the task's user
	Sibling  string `json:"sibling"` // another, named relative to the workspace ("../x")
	ShmKey   int    `json:"shm_key"`
	Sock     string `json:"sock"`     // pathname unix socket outside the workspace
	Abstract string `json:"abstract"` // abstract unix socket name (without the NUL)
	TCP      int    `json:"tcp"`
	UDP      int    `json:"udp"`
	Victim   int    `json:"victim"` // an unrelated process of the task's user
	Peer     int    `json:"peer"`   // another, for the scheduling attacks (Victim may be dead by then)
	Dev      uint64 `json:"dev"`    // device number of the root filesystem's disk
}

// attacks are run in this order by "execx-attack all".
var attacks = []struct {
	name string
	run  func(t *attackTargets) error
}{
	{"ptrace-runner", func(t *attackTargets) error { return ptraceSeize(t.Runner) }},
	{"ptrace-supervisor", func(t *attackTargets) error { return ptraceSeize(os.Getppid()) }},
	{"mem-write-runner", func(t *attackTargets) error {
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", t.Runner), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteAt([]byte("PWNED!!!"), int64(t.Canary))
		return err
	}},
	{"pidfd-getfd-runner", func(t *attackTargets) error {
		pfd, err := unix.PidfdOpen(t.Runner, 0)
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		fd, err := unix.PidfdGetfd(pfd, 1, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte("FORGED-BY-PIDFD\n"))
		return err
	}},
	{"read-runner-environ", func(t *attackTargets) error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", t.Runner))
		fmt.Printf("environ: %q\n", b)
		return err
	}},
	{"read-runner-stdin", func(t *attackTargets) error {
		f, err := os.Open(fmt.Sprintf("/proc/%d/fd/0", t.Runner))
		if err != nil {
			return err
		}
		defer f.Close()
		_ = f.SetReadDeadline(time.Now().Add(time.Second))
		b := make([]byte, 256)
		n, err := f.Read(b)
		fmt.Printf("stdin: %q\n", b[:n])
		return err
	}},
	{"write-runner-stdout", func(t *attackTargets) error {
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", t.Runner), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write([]byte(`{"kind":"Result","status":"succeeded","FORGED":true}` + "\n"))
		return err
	}},
	{"signal-runner", func(t *attackTargets) error { return unix.Kill(t.Runner, unix.SIGUSR1) }},
	{"signal-unrelated", func(t *attackTargets) error { return unix.Kill(t.Victim, unix.SIGTERM) }},
	{"mknod-block", func(t *attackTargets) error { return unix.Mknod("disk", unix.S_IFBLK|0o600, int(t.Dev)) }},
	{"chmod-outside", func(t *attackTargets) error { return unix.Chmod(t.File, 0o666) }},
	// Relative to the working directory, which the runner opened in its
	// own mount namespace: the view must hold for it too.
	{"chmod-outside-relative", func(t *attackTargets) error { return unix.Chmod(t.Sibling, 0o666) }},
	{"chown-outside", func(t *attackTargets) error { return unix.Chown(t.File, 12345, -1) }},
	{"xattr-outside", func(t *attackTargets) error { return unix.Setxattr(t.File, "user.pwned", []byte("1"), 0) }},
	{"utime-outside", func(t *attackTargets) error {
		return unix.UtimesNano(t.File, []unix.Timespec{{Sec: 0}, {Sec: 0}})
	}},
	{"sysv-shm", func(t *attackTargets) error {
		id, err := unix.SysvShmGet(t.ShmKey, 0, 0)
		if err != nil {
			return err
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			return err
		}
		copy(b, "PWNED")
		return unix.SysvShmDetach(b)
	}},
	{"sethostname", func(t *attackTargets) error {
		h, err := os.Hostname() // the same name: proves the right, changes nothing
		if err != nil {
			return err
		}
		return unix.Sethostname([]byte(h))
	}},
	{"unix-pathname", func(t *attackTargets) error { return dial("unix", t.Sock) }},
	{"unix-abstract", func(t *attackTargets) error { return dial("unix", "@"+t.Abstract) }},
	{"tcp-loopback", func(t *attackTargets) error { return dial("tcp4", "127.0.0.1:"+strconv.Itoa(t.TCP)) }},
	{"udp-loopback", func(t *attackTargets) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("datagram"), 0, &unix.SockaddrInet4{Port: t.UDP, Addr: [4]byte{127, 0, 0, 1}})
	}},
	{"raw-socket", func(t *attackTargets) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}},
	// Another process's scheduling, I/O priority, nice, affinity and
	// limits: chrt -i, ionice -c3, renice, taskset, prlimit on its pid.
	{"sched-unrelated", func(t *attackTargets) error {
		return unix.SchedSetAttr(t.Peer, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 5 /* SCHED_IDLE */}, 0)
	}},
	{"ioprio-unrelated", func(t *attackTargets) error {
		const whoProcess, classIdle = 1, 3
		_, _, e := unix.RawSyscall(unix.SYS_IOPRIO_SET, whoProcess, uintptr(t.Peer), classIdle<<13)
		return errnoOrNil(e)
	}},
	{"nice-unrelated", func(t *attackTargets) error { return unix.Setpriority(unix.PRIO_PROCESS, t.Peer, 15) }},
	{"affinity-unrelated", func(t *attackTargets) error {
		var one unix.CPUSet
		one.Set(0)
		return unix.SchedSetaffinity(t.Peer, &one)
	}},
	{"prlimit-unrelated", func(t *attackTargets) error {
		return unix.Prlimit(t.Peer, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 7, Max: 7}, nil)
	}},
	// A set-user-ID (root's, for a root task) binary left in the
	// workspace for whoever runs it later: made by chmod, and by open.
	{"setuid-chmod", func(t *attackTargets) error {
		if err := os.WriteFile("suid-chmod", []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
		return unix.Chmod("suid-chmod", 0o4755)
	}},
	{"setgid-open", func(t *attackTargets) error {
		fd, err := unix.Open("sgid-open", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	}},
	{"netlink-route", func(t *attackTargets) error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}},
}

// ptraceSeize attaches to pid without stopping it: success is the attack
// (a tracer can then poke its memory and registers). The tracee is left
// when this process exits.
func ptraceSeize(pid int) error { return unix.PtraceSeize(pid) }

func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close() // connected: the attack worked
}

// attackMain is the attack program: "all TARGETS-JSON" runs every attack,
// "tiocsti TTY TEXT" types TEXT into terminal TTY, "sleep MARKER" sleeps
// (a descendant for the kill tests, found by its marker argument), "swap
// A B" keeps exchanging two names.
func attackMain(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "all":
		var t attackTargets
		if err := json.Unmarshal([]byte(args[1]), &t); err != nil {
			fmt.Println("bad targets:", err)
			return 2
		}
		for _, a := range attacks {
			attackSay(a.name, a.run(&t))
		}
		return 0
	case "tiocsti":
		attackSay("tiocsti", tiocsti(args[1], args[2]))
		return 0
	case "sleep":
		signal.Ignore(unix.SIGHUP)
		time.Sleep(time.Hour)
	case "swap":
		// "swap A B" exchanges the names A and B (renameat2
		// RENAME_EXCHANGE, atomic: each name always exists) until killed,
		// so a path through A names one and then the other.
		for {
			if err := unix.Renameat2(unix.AT_FDCWD, args[1], unix.AT_FDCWD, args[2], unix.RENAME_EXCHANGE); err != nil {
				fmt.Println("swap:", err)
				return 1
			}
			time.Sleep(20 * time.Microsecond)
		}
	case "setxattr":
		// "setxattr PATH" sets a user xattr on PATH (a POSIX ACL is one
		// more xattr: what holds for this holds for setfacl).
		attackSay("setxattr", unix.Setxattr(args[1], "user.art", []byte("1"), 0))
		return 0
	case "net":
		var list []netAttack
		if err := json.Unmarshal([]byte(args[1]), &list); err != nil {
			fmt.Println("bad net attacks:", err)
			return 2
		}
		for _, a := range list {
			attackSay(a.Name, a.run())
		}
		return 0
	}
	return 2
}

// netAttack is one attempt at the network from inside a task: a raw
// request to the proxy (Raw, on 127.0.0.1:ProxyPort; "ok" when it answers
// 200), a TCP connection to Addr, or a UDP datagram to Addr.
type netAttack struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // proxy, tcp, udp
	Raw  string `json:"raw,omitempty"`
	Addr string `json:"addr,omitempty"`
}

func (a netAttack) run() error {
	switch a.Kind {
	case "udp":
		c, err := net.Dial("udp", a.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("PWNED-UDP"))
		return err
	case "tcp":
		c, err := net.DialTimeout("tcp", a.Addr, 2*time.Second)
		if err != nil {
			return err
		}
		c.Write([]byte("PWNED-TCP\n"))
		return c.Close()
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ProxyPort)), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte(a.Raw)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line := make([]byte, 256)
	n, _ := c.Read(line)
	status := strings.TrimSpace(strings.SplitN(string(line[:n]), "\n", 2)[0])
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		return fmt.Errorf("%s", status)
	}
	return nil
}

func attackSay(name string, err error) {
	if err != nil {
		fmt.Printf("ATTACK %s blocked: %v\n", name, err)
		return
	}
	fmt.Printf("ATTACK %s ok\n", name)
}

// tiocsti types text into the terminal as if the user had: a command line
// the caller's shell would run once the runner exits.
func tiocsti(tty, text string) error {
	fd, err := unix.Open(tty, unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		if fd, err = unix.Open(tty, unix.O_RDONLY|unix.O_NOCTTY, 0); err != nil {
			return err
		}
	}
	defer unix.Close(fd)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); errno != 0 {
			return errno
		}
	}
	return nil
}

// parseAttacks reads the task's ATTACK lines: name → nil (it worked) or
// its error text.
func parseAttacks(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "ATTACK ")
		if !ok {
			continue
		}
		name, verdict, _ := strings.Cut(rest, " ")
		got[name] = verdict
	}
	return got
}

func errnoOrNil(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
