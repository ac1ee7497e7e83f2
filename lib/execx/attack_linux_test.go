//go:build linux

package execx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// attackEnv is the attack program and runner binary, copied where an
// unprivileged user can execute them: this test binary, and a link to it
// named attackName in a directory of its own.
type attackEnv struct {
	exe, bin string
}

func newAttackEnv(t *testing.T) *attackEnv {
	t.Helper()
	dir, err := os.MkdirTemp("", "execx-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &attackEnv{exe: filepath.Join(dir, "execx.test"), bin: filepath.Join(dir, "bin")}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(e.exe, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.exe, filepath.Join(e.bin, attackName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// attackUser is who the runner runs as: the test's own user, or (when
// the test is root) also an unprivileged one.
type attackUser struct {
	name string
	cred *syscall.Credential // nil: the test's own
}

func (u attackUser) uid() int {
	if u.cred == nil {
		return os.Geteuid()
	}
	return int(u.cred.Uid)
}

func (u attackUser) gid() int {
	if u.cred == nil {
		return os.Getegid()
	}
	return int(u.cred.Gid)
}

func attackUsers() []attackUser {
	if os.Geteuid() != 0 {
		return []attackUser{{name: "user"}}
	}
	return []attackUser{{name: "root"}, {name: "nobody", cred: &syscall.Credential{Uid: 65534, Gid: 65534}}}
}

// unprivilegedUser is the user of attackUsers that is not root, or skips
// the test.
func unprivilegedUser(t *testing.T) attackUser {
	t.Helper()
	for _, a := range attackUsers() {
		if a.uid() != 0 {
			return a
		}
	}
	t.Skip("needs an unprivileged user to run as (as root: nobody)")
	return attackUser{}
}

// runAttackRunner starts a runner as u with secrets in its environment
// and on its stdin, and returns its REPORT and everything else it wrote
// on stdout (where a forged Result would show).
func runAttackRunner(t *testing.T, e *attackEnv, u attackUser, cfg attackRunner, secret string) (attackReport, string) {
	t.Helper()
	cfgJSON, _ := json.Marshal(cfg)
	cmd := exec.Command(e.exe, "-test.run=^$")
	cmd.Env = []string{"PATH=" + e.bin + ":/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/",
		"EXECX_ATTACK_RUNNER=" + string(cfgJSON), "EXECX_SECRET=env-" + secret}
	cmd.Stdin = strings.NewReader("stdin-" + secret + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("runner (%s, %s): %v\nstdout:\n%s\nstderr:\n%s", cfg.Mode, u.name, err, out, stderr.String())
	}
	before, line, ok := bytes.Cut(out, []byte("REPORT "))
	if !ok {
		t.Fatalf("runner (%s, %s) printed no report:\n%s\nstderr:\n%s", cfg.Mode, u.name, out, stderr.String())
	}
	var rep attackReport
	if err := json.Unmarshal(bytes.TrimSpace(line), &rep); err != nil {
		t.Fatalf("runner report %q: %v", line, err)
	}
	if rep.Error != "" && cfg.Mode != "bwrap" {
		t.Fatalf("runner (%s, %s): %s", cfg.Mode, u.name, rep.Error)
	}
	return rep, string(before)
}

// acceptCounter counts connections accepted on l.
func acceptCounter(t *testing.T, l net.Listener) func() int {
	n := make(chan int, 1)
	n <- 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n <- <-n + 1
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return func() int { v := <-n; n <- v; return v }
}

// attackScene is everything one run of the attacks aims at, set up fresh,
// and how to see from outside whether each attack had its effect.
type attackScene struct {
	ws      string
	targets attackTargets
	effects map[string]func(rep attackReport, stdout string) bool
}

func newAttackScene(t *testing.T, u attackUser, secret string) *attackScene {
	t.Helper()
	base, err := os.MkdirTemp("", "execx-scene-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	_ = os.Chmod(base, 0o755)
	sc := &attackScene{ws: filepath.Join(base, "ws")}
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustDo(os.Mkdir(sc.ws, 0o755))
	mustDo(os.Chown(sc.ws, u.uid(), u.gid()))
	// A file outside the workspace that the task's user owns.
	file := filepath.Join(base, "outside.txt")
	mustDo(os.WriteFile(file, []byte("precious\n"), 0o644))
	mustDo(os.Chmod(file, 0o644))
	mustDo(os.Chown(file, u.uid(), u.gid()))
	st0, err := os.Stat(file)
	mustDo(err)
	sibling := filepath.Join(base, "sibling.txt")
	mustDo(os.WriteFile(sibling, []byte("precious\n"), 0o644))
	mustDo(os.Chmod(sibling, 0o644))
	mustDo(os.Chown(sibling, u.uid(), u.gid()))
	// A SysV shared-memory segment of the task's user.
	key := 0x5e000000 | (os.Getpid() & 0xffff) ^ int(nextShmKey())
	shmid, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	mustDo(err)
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(shmid, unix.IPC_RMID, nil) })
	var desc unix.SysvShmDesc
	_, err = unix.SysvShmCtl(shmid, unix.IPC_STAT, &desc)
	mustDo(err)
	desc.Perm.Uid, desc.Perm.Gid = uint32(u.uid()), uint32(u.gid())
	_, err = unix.SysvShmCtl(shmid, unix.IPC_SET, &desc)
	mustDo(err)
	// Listeners outside: a pathname and an abstract unix socket, TCP, UDP.
	sockDir := filepath.Join(base, "sock")
	mustDo(os.Mkdir(sockDir, 0o777))
	mustDo(os.Chmod(sockDir, 0o777))
	sock := filepath.Join(sockDir, "agent.sock")
	ul, err := net.Listen("unix", sock)
	mustDo(err)
	mustDo(os.Chmod(sock, 0o777))
	unixAccepted := acceptCounter(t, ul)
	abstract := fmt.Sprintf("execx-attack-%d-%d", os.Getpid(), nextShmKey())
	al, err := net.Listen("unix", "@"+abstract)
	mustDo(err)
	abstractAccepted := acceptCounter(t, al)
	tcpPort, tcpAccepted := tcpListener(t)
	udpPort, udpReceived := udpListener(t)
	// An unrelated process of the task's user.
	victim := exec.Command("sleep", "1000")
	victim.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setsid: true}
	mustDo(victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	// Another, whose scheduling and limits the task tries to change.
	peer := exec.Command("sleep", "1000")
	peer.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setsid: true}
	mustDo(peer.Start())
	t.Cleanup(func() { _ = peer.Process.Kill(); _ = peer.Wait() })
	peer0 := schedOf(t, peer.Process.Pid)
	var root unix.Stat_t
	mustDo(unix.Stat("/", &root))

	sc.targets = attackTargets{File: file, Sibling: "../sibling.txt", ShmKey: key, Sock: sock, Abstract: abstract,
		TCP: tcpPort, UDP: udpPort, Victim: victim.Process.Pid, Peer: peer.Process.Pid, Dev: root.Dev}
	stat := func() (unix.Stat_t, bool) {
		var st unix.Stat_t
		return st, unix.Stat(file, &st) == nil
	}
	sc.effects = map[string]func(attackReport, string) bool{
		"mem-write-runner":    func(r attackReport, _ string) bool { return r.Canary != string(runnerCanary[:]) },
		"pidfd-getfd-runner":  func(_ attackReport, out string) bool { return strings.Contains(out, "FORGED-BY-PIDFD") },
		"read-runner-environ": func(r attackReport, _ string) bool { return strings.Contains(r.Output, "env-"+secret) },
		"read-runner-stdin":   func(r attackReport, _ string) bool { return strings.Contains(r.Output, "stdin-"+secret) },
		"write-runner-stdout": func(_ attackReport, out string) bool { return strings.Contains(out, `"FORGED":true`) },
		"signal-runner":       func(r attackReport, _ string) bool { return r.Usr1 > 0 },
		"signal-unrelated":    func(attackReport, string) bool { return !running(victim.Process.Pid) },
		"mknod-block": func(attackReport, string) bool {
			var st unix.Stat_t
			return unix.Lstat(filepath.Join(sc.ws, "disk"), &st) == nil
		},
		"chmod-outside": func(attackReport, string) bool { st, _ := stat(); return st.Mode&0o777 != 0o644 },
		"chmod-outside-relative": func(attackReport, string) bool {
			st, err := os.Stat(sibling)
			return err == nil && st.Mode()&0o777 != 0o644
		},
		"chown-outside": func(attackReport, string) bool { st, _ := stat(); return int(st.Uid) != u.uid() },
		"xattr-outside": func(attackReport, string) bool {
			_, err := unix.Getxattr(file, "user.pwned", make([]byte, 8))
			return err == nil
		},
		"utime-outside": func(attackReport, string) bool { st, _ := stat(); return st.Mtim.Sec != st0.ModTime().Unix() },
		"sysv-shm": func(attackReport, string) bool {
			b, err := unix.SysvShmAttach(shmid, 0, unix.SHM_RDONLY)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.SysvShmDetach(b)
			return string(b[:5]) == "PWNED"
		},
		"unix-pathname": func(attackReport, string) bool { return unixAccepted() > 0 },
		"unix-abstract": func(attackReport, string) bool { return abstractAccepted() > 0 },
		"tcp-loopback":  func(attackReport, string) bool { return tcpAccepted() > 0 },
		"udp-loopback":  func(attackReport, string) bool { return udpReceived() != "" },
		"sched-unrelated": func(attackReport, string) bool {
			return schedOf(t, peer.Process.Pid).sched.Policy != peer0.sched.Policy
		},
		"ioprio-unrelated": func(attackReport, string) bool { return schedOf(t, peer.Process.Pid).ioprio != peer0.ioprio },
		"nice-unrelated": func(attackReport, string) bool {
			return schedOf(t, peer.Process.Pid).sched.Nice != peer0.sched.Nice
		},
		"affinity-unrelated": func(attackReport, string) bool {
			return schedOf(t, peer.Process.Pid).affinity != peer0.affinity
		},
		"prlimit-unrelated": func(attackReport, string) bool { return schedOf(t, peer.Process.Pid).nofile != peer0.nofile },
		"setuid-chmod":      func(attackReport, string) bool { return setIDIn(filepath.Join(sc.ws, "suid-chmod")) },
		"setgid-open":       func(attackReport, string) bool { return setIDIn(filepath.Join(sc.ws, "sgid-open")) },
	}
	return sc
}

// peerState is what the scheduling attacks try to change in a process.
type peerState struct {
	sched    unix.SchedAttr
	ioprio   int
	affinity unix.CPUSet
	nofile   string // soft and hard
}

func schedOf(t *testing.T, pid int) peerState {
	t.Helper()
	var st peerState
	attr, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		t.Fatalf("sched_getattr %d: %v", pid, err)
	}
	st.sched = *attr
	prio, _, e := unix.RawSyscall(unix.SYS_IOPRIO_GET, 1, uintptr(pid), 0)
	if e != 0 {
		t.Fatalf("ioprio_get %d: %v", pid, e)
	}
	st.ioprio = int(prio)
	if err := unix.SchedGetaffinity(pid, &st.affinity); err != nil {
		t.Fatalf("sched_getaffinity %d: %v", pid, err)
	}
	// From /proc (prlimit64 would need CAP_SYS_RESOURCE for another
	// user's process, which a container's root may lack).
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			st.nofile = strings.Join(strings.Fields(line)[3:5], " ")
		}
	}
	return st
}

// setIDIn reports whether path exists with a set-user-ID or set-group-ID bit.
func setIDIn(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
}

var shmSeq int32

func nextShmKey() int32 { shmSeq++; return shmSeq }

// attackModes are the runner's modes under attack and bubblewrap, the
// trusted peer strict is held to.
var attackModes = []string{"none", "landlock", "strict", "bwrap"}

// runAttacks runs every attack once in mode as u and returns, per attack,
// whether it had its effect: seen from outside where it can be, else the
// attack's own report of its system calls.
func runAttacks(t *testing.T, e *attackEnv, mode string, u attackUser) map[string]bool {
	t.Helper()
	secret := fmt.Sprintf("s3cr3t-%d-%s-%s", os.Getpid(), mode, u.name)
	sc := newAttackScene(t, u, secret)
	cfg := attackRunner{Mode: mode, WS: sc.ws, Bin: e.bin, Program: attackName, Args: []string{"all", "{targets}"}, Targets: sc.targets}
	rep, stdout := runAttackRunner(t, e, u, cfg, secret)
	said := parseAttacks(rep.Output)
	got := map[string]bool{}
	for _, a := range attacks {
		verdict, ran := said[a.name]
		if !ran {
			t.Fatalf("%s as %s: attack %s did not run; task output:\n%s", mode, u.name, a.name, rep.Output)
		}
		ok := verdict == "ok"
		if effect, seen := sc.effects[a.name]; seen {
			outside := effect(rep, stdout)
			if outside && !ok {
				t.Errorf("%s as %s: %s had its effect although the task saw %q", mode, u.name, a.name, verdict)
			}
			ok = outside
		}
		got[a.name] = ok
	}
	return got
}

// TestAttacks runs every attack from inside a task, in every mode and as
// root and an unprivileged user, next to bubblewrap on the same attacks;
// strict must block everything bwrap blocks, and each mode exactly what
// docs/artexec.md says it does.
func TestAttacks(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	haveBwrap := true
	if _, err := exec.LookPath("bwrap"); err != nil {
		haveBwrap = false
	}
	e := newAttackEnv(t)
	for _, u := range attackUsers() {
		t.Run(u.name, func(t *testing.T) {
			results := map[string]map[string]bool{}
			for _, mode := range attackModes {
				if mode == "bwrap" && !haveBwrap {
					t.Log("bwrap not on PATH (Debian: bubblewrap): no comparison")
					continue
				}
				results[mode] = runAttacks(t, e, mode, u)
			}
			var table strings.Builder
			fmt.Fprintf(&table, "%-22s", "attack ("+u.name+")")
			for _, mode := range attackModes {
				fmt.Fprintf(&table, " %-9s", mode)
			}
			table.WriteString("\n")
			for _, a := range attacks {
				fmt.Fprintf(&table, "%-22s", a.name)
				for _, mode := range attackModes {
					r, ok := results[mode]
					cell := "-"
					if ok {
						cell = "blocked"
						if r[a.name] {
							cell = "WORKS"
						}
					}
					fmt.Fprintf(&table, " %-9s", cell)
				}
				table.WriteString("\n")
				for _, mode := range []string{"none", "landlock", "strict"} {
					want := attackExpected(mode, u, a.name)
					if results[mode][a.name] != want {
						t.Errorf("%s as %s: attack %s works=%v; docs/artexec.md says %v", mode, u.name, a.name, results[mode][a.name], want)
					}
				}
				if bw, ok := results["bwrap"]; ok && !bw[a.name] && results["strict"][a.name] {
					t.Errorf("as %s: %s is blocked by bwrap but works under strict", u.name, a.name)
				}
			}
			t.Logf("attack results:\n%s", table.String())
		})
	}
}

// attackWorks is the threat model of docs/artexec.md, per mode and user:
// the attacks a mode does not block. Every other attack in attacks is
// blocked, and strict blocks them all.
var attackWorks = map[string]map[string][]string{
	"none": {
		// No sandbox: a root task is root.
		"root": nil, // nil: every attack works
		// An unprivileged task: the runner and the supervisor are
		// non-dumpable (no ptrace, no /proc/PID/{mem,environ,fd}); what
		// needs a capability fails; everything else of its user's works.
		// It also changes the scheduling, I/O priority, nice, affinity
		// and limits of its user's processes, and leaves set-ID files:
		// none has no seccomp filter.
		"user": {"signal-runner", "signal-unrelated", "chmod-outside", "chmod-outside-relative", "xattr-outside", "utime-outside",
			"sysv-shm", "unix-pathname", "unix-abstract", "tcp-loopback", "udp-loopback", "netlink-route",
			"sched-unrelated", "ioprio-unrelated", "nice-unrelated", "affinity-unrelated", "prlimit-unrelated",
			"setuid-chmod", "setgid-open"},
	},
	"landlock": {
		// SysV IPC has no Landlock scope, and Landlock before ABI 9 does
		// not control connecting to a pathname unix socket. A read-only
		// mount view (root's own mount namespace; an unprivileged user's
		// user, PID and mount namespaces) blocks the rest.
		"root": {"sysv-shm", "unix-pathname"},
		"user": {"sysv-shm", "unix-pathname"},
		// Without that view (root without CAP_SYS_ADMIN, a user where
		// user namespaces are refused), Landlock has no right for chmod,
		// xattrs or timestamps: the task changes the metadata of files
		// its user owns outside.
		"noview": {"chmod-outside", "chmod-outside-relative", "xattr-outside", "utime-outside", "sysv-shm", "unix-pathname"},
	},
	"strict": {"root": {}, "user": {}},
}

// attackExpected is whether attack works in mode for user u.
func attackExpected(mode string, u attackUser, attack string) bool {
	who := "user"
	if u.uid() == 0 {
		who = "root"
	}
	if mode == "landlock" && (who == "root" && !stage.HasCap(unix.CAP_SYS_ADMIN) || who == "user" && !userNSUsable()) {
		who = "noview" // root in a container without CAP_SYS_ADMIN; no user namespaces
	}
	works := attackWorks[mode][who]
	if works == nil && mode == "none" && who == "root" {
		return true
	}
	if attack == "unix-pathname" && mode == "landlock" && landlockABI() >= stage.ResolveUnixABI {
		return false
	}
	return slices.Contains(works, attack)
}

// kill -9 of the runner leaves no process of the task running, in any
// mode and as any user, with or without a Pool (whose supervisors, the
// task's and an idle one, end too): not its direct child, not a grandchild, not one
// that left for a session of its own. The supervisor (which the task can
// neither trace nor, under landlock and strict, signal) kills them when
// its parent-death signal comes; under strict the PID namespace dies with
// the supervisor too.
func TestRunnerKilledLeavesNothing(t *testing.T) {
	e := newAttackEnv(t)
	for _, u := range attackUsers() {
		for _, name := range []string{"none", "landlock", "strict", "none+pool", "landlock+pool"} {
			t.Run(u.name+"/"+name, func(t *testing.T) {
				mode, pool := strings.CutSuffix(name, "+pool")
				if mode != "none" {
					needLandlock(t)
				}
				if mode == "strict" {
					needNamespaces(t)
				}
				marker := fmt.Sprintf("execx-kill9-%d-%s-%s", os.Getpid(), u.name, mode)
				ws, err := os.MkdirTemp("", "execx-kill9-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(ws) })
				_ = os.Chown(ws, u.uid(), u.gid())
				script := fmt.Sprintf(`%[1]s sleep %[2]s &
sh -c '%[1]s sleep %[2]s & wait' &
setsid sh -c '%[1]s sleep %[2]s &' &
wait`, attackName, marker)
				cfg, _ := json.Marshal(attackRunner{Mode: mode, WS: ws, Bin: e.bin, Program: "sh", Args: []string{"-c", script}, Pool: pool})
				runner := exec.Command(e.exe, "-test.run=^$")
				runner.Env = []string{"PATH=" + e.bin + ":/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/", "EXECX_ATTACK_RUNNER=" + string(cfg)}
				runner.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
				if err := runner.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					left, _ := systest.PidsWithArg(marker)
					for _, p := range left {
						_ = unix.Kill(p, unix.SIGKILL)
					}
				})
				deadline := time.Now().Add(systest.Deadline)
				for {
					pids, _ := systest.PidsWithArg(marker)
					if len(pids) == 3 {
						break
					}
					if time.Now().After(deadline) {
						_ = runner.Process.Kill()
						t.Fatalf("the task's three sleepers never all started (%v)", pids)
					}
					time.Sleep(5 * time.Millisecond)
				}
				// The pool's supervisors (the task's and an idle one).
				sups := serveSupervisors(runner.Process.Pid)
				if want := map[bool]int{true: 2}[pool]; len(sups) != want {
					_ = runner.Process.Kill()
					t.Fatalf("the runner has pooled supervisors %v; want %d", sups, want)
				}
				if err := runner.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = runner.Wait()
				killed := time.Now()
				for {
					left, _ := systest.PidsWithArg(marker)
					for _, s := range sups {
						if running(s) {
							left = append(left, s)
						}
					}
					if len(left) == 0 {
						t.Logf("every process of the task gone %v after the runner's SIGKILL", time.Since(killed).Round(time.Millisecond))
						return
					}
					if time.Since(killed) > time.Second {
						t.Fatalf("processes %v of the task still running 1s after the runner was killed", left)
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
}

// A task cannot type into the terminal its runner was started from: the
// runner runs on a real terminal (tmux), the task tries TIOCSTI on it,
// and the shell reads the next line once the runner is gone. A line the
// test types itself arrives intact exactly when nothing was injected.
// Every task is in a new session (no controlling terminal, which the
// kernel requires for TIOCSTI without CAP_SYS_ADMIN); landlock and strict
// also drop every capability, deny the ioctl by seccomp and do not grant
// device ioctls. A root task under none keeps CAP_SYS_ADMIN: documented.
func TestTIOCSTIOnRealTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not on PATH")
	}
	e := newAttackEnv(t)
	for _, u := range attackUsers() {
		for _, mode := range attackModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				// Each run has a terminal (tmux server) of its own and
				// spends most of its time waiting on it.
				t.Parallel()
				tiocstiRun(t, e, u, mode)
			})
		}
	}
}

// tiocstiRun is one TIOCSTI attack as u in mode. For another user than
// the test's, the terminal is handed to that user first (a terminal is
// its user's own), and the runner runs as that user.
func tiocstiRun(t *testing.T, e *attackEnv, u attackUser, mode string) {
	switch mode {
	case "landlock":
		needLandlock(t)
	case "strict":
		needLandlock(t)
		needNamespaces(t)
	case "bwrap":
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bwrap not on PATH (Debian: bubblewrap)")
		}
	}
	dir, err := os.MkdirTemp("", "execx-tty-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(ws, u.uid(), u.gid())
	cfg, _ := json.Marshal(attackRunner{Mode: mode, WS: ws, Bin: e.bin, Program: attackName,
		Args: []string{"tiocsti", "{tty}", "echo PWNED-BY-TIOCSTI\n"}})
	as := ""
	if u.cred != nil {
		as = fmt.Sprintf("setpriv --reuid %d --regid %d --clear-groups ", u.uid(), u.gid())
	}
	script := `while [ ! -e go ]; do sleep 0.01; done; ` + as + `env -i PATH="$P" TMPDIR=/tmp EXECX_ATTACK_RUNNER="$C" "$X" -test.run='^$' >report.txt 2>&1; echo RUNNER-DONE; read -r line; echo "GOT[$line]"`
	term := systest.StartTerm(t, systest.TermOptions{Dir: dir,
		Env: []string{"P=" + e.bin + ":/usr/bin:/bin", "C=" + string(cfg), "X=" + e.exe}}, "sh", "-c", script)
	if u.cred != nil {
		if err := os.Chown(term.TTY(), u.uid(), u.gid()); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "go"), "")
	term.WaitFor("the runner to finish", func(s string) bool { return strings.Contains(s, "RUNNER-DONE") })
	term.Keys("clean", "Enter")
	screen := term.WaitFor("the shell to read a line", func(s string) bool { return strings.Contains(s, "GOT[") })
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	var rep attackReport
	if _, line, ok := strings.Cut(string(report), "REPORT "); !ok || json.Unmarshal([]byte(line), &rep) != nil {
		t.Fatalf("no runner report:\n%s", report)
	}
	said := parseAttacks(rep.Output)["tiocsti"]
	injected := !strings.Contains(screen, "GOT[clean]")
	if want := mode == "none" && u.uid() == 0; injected != want {
		t.Errorf("injected=%v, want %v; screen:\n%s\nrunner:\n%s", injected, want, screen, report)
	}
	if (said == "ok") != injected {
		t.Errorf("the task says %q but injected=%v; runner:\n%s", said, injected, report)
	}
	t.Logf("tiocsti %s", said)
}

// No thread of the runner or of the supervisor is ever restricted: while
// a landlock or strict task runs, every thread of both has no seccomp
// filter and no no_new_privs (the exec stage applied them, with Landlock,
// in the task's own process only).
func TestRunnerAndSupervisorUnrestricted(t *testing.T) {
	needLandlock(t)
	for _, iso := range []Isolation{IsolationLandlock, IsolationStrict} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == IsolationStrict {
				needNamespaces(t)
			}
			p := policyFor(t, iso, "sh")
			done := make(chan *Result, 1)
			go func() {
				res, _ := Run(context.Background(), p, sh(`grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; echo > ready; while [ ! -e go ]; do sleep 0.01; done`), Options{})
				done <- res
			}()
			ready := filepath.Join(p.Workspace, "ready")
			deadline := time.Now().Add(systest.Deadline)
			for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
				if time.Now().After(deadline) {
					t.Fatal("the task never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			var sup int
			for _, c := range shim.ChildrenOf(os.Getpid()) {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); string(b) == shim.Arg0+"\x00supervise\x00" {
					sup = c
				}
			}
			if sup == 0 {
				t.Fatal("no supervisor among the test's children")
			}
			for _, pid := range []int{os.Getpid(), sup} {
				tids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
				for _, f := range tids {
					b, _ := os.ReadFile(f)
					for _, want := range []string{"NoNewPrivs:\t0\n", "Seccomp:\t0\n"} {
						if !strings.Contains(string(b), want) {
							t.Errorf("%s lacks %q: a runner or supervisor thread is restricted", f, want)
						}
					}
				}
			}
			writeFile(t, filepath.Join(p.Workspace, "go"), "")
			res := <-done
			if res == nil || !strings.Contains(res.Output, "NoNewPrivs:\t1") || !strings.Contains(res.Output, "Seccomp:\t2") {
				t.Errorf("the task itself is not restricted: %+v", res)
			}
		})
	}
}

// A policy can keep named capabilities for a root task, and let the
// workspace hold named kinds of special file; by default neither.
func TestKeepCapabilitiesAndWorkspaceNodes(t *testing.T) {
	needLandlock(t)
	script := `grep '^CapEff:' /proc/self/status; mkfifo fifo && echo fifo-made`
	p := policyFor(t, IsolationLandlock, "sh")
	res := mustRun(t, p, sh(script), Options{})
	if !strings.Contains(res.Output, "CapEff:\t0000000000000000") || strings.Contains(res.Output, "fifo-made") {
		t.Errorf("default landlock: %q; want no capability and no FIFO", res.Output)
	}
	p = policyFor(t, IsolationLandlock, "sh")
	p.KeepCapabilities, p.WorkspaceNodes = []string{"CAP_CHOWN"}, []string{"fifo"}
	res = mustRun(t, p, sh(script), Options{})
	wantCaps := "CapEff:\t0000000000000000"
	if os.Geteuid() == 0 {
		wantCaps = "CapEff:\t0000000000000001"
	}
	if !strings.Contains(res.Output, wantCaps) || !strings.Contains(res.Output, "fifo-made") {
		t.Errorf("keep CAP_CHOWN, nodes fifo: %q; want %s and a FIFO", res.Output, wantCaps)
	}
	p.KeepCapabilities = []string{"CAP_NOPE"}
	wantRefusal(t, p, sh("true"), exitcode.Usage, nil, "policy.keep_capabilities[0]")
	p.KeepCapabilities, p.WorkspaceNodes = nil, []string{"pipe"}
	wantRefusal(t, p, sh("true"), exitcode.Usage, nil, "policy.workspace_nodes[0]")
}
