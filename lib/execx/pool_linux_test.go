//go:build linux

package execx

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/jsonx"
)

// runOn runs script on pool (nil: a supervisor of its own) and returns
// the Result, with the first line the task prints — its supervisor's pid,
// the parent of the program under none and landlock — cut off the output.
func runOn(t *testing.T, pool *Pool, p *Policy, script string) (*Result, int) {
	t.Helper()
	task := sh(`echo $PPID; ` + script)
	task.Limits.Timeout = jsonx.Duration(time.Minute) // a hang fails, it does not stall the suite
	res := mustRun(t, p, task, Options{Supervised: true, Pool: pool})
	line, rest, _ := strings.Cut(res.Output, "\n")
	ppid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("task output %q: no supervisor pid first", res.Output)
	}
	res.Output = rest
	return res, ppid
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// A pool lends the same supervisor to one task after another under none
// and under landlock (as root too: the read-only view is the exec
// stage's own); a task whose supervisor would depend on it (strict's
// namespaces) gets one of its own, and the pool keeps nothing for it.
func TestPoolReuse(t *testing.T) {
	for _, iso := range []Isolation{IsolationNone, IsolationLandlock, IsolationStrict} {
		t.Run(string(iso), func(t *testing.T) {
			if iso != IsolationNone {
				needLandlock(t)
			}
			if iso == IsolationStrict {
				needNamespaces(t)
			}
			pool := NewPool(1)
			defer pool.Close()
			p := policyFor(t, iso, "sh")
			if iso == IsolationStrict {
				res := mustRun(t, p, sh(`true`), Options{Pool: pool})
				pool.mu.Lock()
				idle, live := len(pool.idle), pool.live
				pool.mu.Unlock()
				if res.Status != StatusSucceeded || idle != 0 || live != 0 {
					t.Errorf("status %s, pool idle %d live %d; want succeeded on a supervisor of its own, nothing pooled", res.Status, idle, live)
				}
				return
			}
			_, first := runOn(t, pool, p, `true`)
			if got := cmdline(first); got != shim.Arg0+" serve " {
				t.Fatalf("the task's parent %d is %q; want a serving supervisor", first, got)
			}
			for range 3 {
				res, ppid := runOn(t, pool, p, `echo again`)
				if ppid != first || res.Output != "again\n" || res.Status != StatusSucceeded {
					t.Errorf("supervisor %d (first %d), status %s output %q; want the same supervisor, succeeded, again", ppid, first, res.Status, res.Output)
				}
			}
		})
	}
}

// A task under none can kill, stop or terminate its pooled supervisor
// (it runs as the same user). Its own result is what it is on a
// supervisor of its own, the supervisor is never used again, and the
// next task runs normally on a fresh one.
func TestPoolSupervisorAttacked(t *testing.T) {
	for _, c := range []struct {
		sig    string
		status Status
		out    string
	}{
		{"KILL", StatusFailed, "before\n"},           // the supervisor's death takes the program (its Pdeathsig)
		{"STOP", StatusSucceeded, "before\nafter\n"}, // the runner continues a stopped supervisor
		{"TERM", StatusFailed, "before\n"},           // as the runner's death: the supervisor kills the task
	} {
		t.Run(c.sig, func(t *testing.T) {
			pool := NewPool(1)
			defer pool.Close()
			p := policyFor(t, IsolationNone, "sh")
			_, warm := runOn(t, pool, p, `true`)
			// (The pause lets the supervisor report "started" first: killed
			// before that, the run fails to start, pooled or not.)
			attack := `echo before; sleep 0.1; kill -` + c.sig + ` $PPID; sleep 0.2; echo after`
			res, ppid := runOn(t, pool, p, attack)
			own, _ := runOn(t, nil, p, attack)
			if ppid != warm {
				t.Fatalf("the attack ran on supervisor %d, not the pooled %d", ppid, warm)
			}
			for _, r := range []*Result{res, own} {
				if r.Status != c.status || r.Output != c.out {
					t.Errorf("status %s output %q; want %s %q", r.Status, r.Output, c.status, c.out)
				}
			}
			if res.Status != own.Status || res.ExitCode != own.ExitCode || res.Signal != own.Signal || res.Output != own.Output {
				t.Errorf("pooled: %s exit %d signal %q %q; on its own supervisor: %s exit %d signal %q %q",
					res.Status, res.ExitCode, res.Signal, res.Output, own.Status, own.ExitCode, own.Signal, own.Output)
			}
			waitGone(t, ppid, 5*time.Second)
			next, fresh := runOn(t, pool, p, `echo next`)
			if fresh == ppid || next.Status != StatusSucceeded || next.Output != "next\n" {
				t.Errorf("next task: supervisor %d (attacked %d), %s %q; want a fresh supervisor, succeeded, next", fresh, ppid, next.Status, next.Output)
			}
		})
	}
}

// SIGTERM, SIGINT or SIGHUP to an idle supervisor ends it; the pool then
// starts a fresh one for the next task.
func TestPoolIdleSupervisorSignalled(t *testing.T) {
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			pool := NewPool(1)
			defer pool.Close()
			p := policyFor(t, IsolationNone, "sh")
			_, idle := runOn(t, pool, p, `true`)
			if err := unix.Kill(idle, sig); err != nil {
				t.Fatal(err)
			}
			waitGone(t, idle, 5*time.Second)
			res, fresh := runOn(t, pool, p, `echo ok`)
			if fresh == idle || res.Status != StatusSucceeded || res.Output != "ok\n" {
				t.Errorf("supervisor %d (signalled %d), %s %q; want a fresh one, succeeded", fresh, idle, res.Status, res.Output)
			}
		})
	}
}

// SIGTERM, SIGINT or SIGHUP to a supervisor while its task runs kills
// the task and ends the supervisor, under none and landlock: its wait for
// the task (a raw system call at first, see the shim's waitReadable) must
// let the goroutine that handles the signal run. The task runs for
// seconds, well past the raw wait's bound, and gets the signal at
// different points of it.
func TestPoolBusySupervisorSignalled(t *testing.T) {
	for _, iso := range []Isolation{IsolationNone, IsolationLandlock} {
		for i, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
			t.Run(string(iso)+"/"+unix.SignalName(sig), func(t *testing.T) {
				pool := NewPool(1)
				defer pool.Close()
				p := policyFor(t, iso, "sh", "sleep")
				_, sup := runOn(t, pool, p, `true`)
				marker := fmt.Sprintf("300.%d%d", os.Getpid(), i)
				t.Cleanup(func() {
					left, _ := systest.PidsWithArg(marker)
					for _, pid := range left {
						_ = unix.Kill(pid, unix.SIGKILL)
					}
				})
				done := make(chan *Result, 1)
				go func() {
					res, _ := Run(context.Background(), p, sh(`sleep `+marker), Options{Supervised: true, Pool: pool})
					done <- res
				}()
				deadline := time.Now().Add(10 * time.Second)
				for {
					if left, _ := systest.PidsWithArg(marker); len(left) == 1 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the task did not start")
					}
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(time.Duration(i*40) * time.Millisecond) // in and past the raw wait
				sent := time.Now()
				if err := unix.Kill(sup, sig); err != nil {
					t.Fatal(err)
				}
				select {
				case res := <-done:
					if res == nil || res.Status == StatusSucceeded {
						t.Errorf("task whose supervisor got %v: %+v; want it killed", sig, res)
					}
					t.Logf("Run returned %v after the signal", time.Since(sent)) // a figure, not a verdict
				case <-time.After(20 * time.Second):
					t.Fatalf("Run still running 20 s after its supervisor got %v", sig)
				}
				if left, _ := systest.PidsWithArg(marker); len(left) != 0 {
					t.Errorf("task processes %v left after Run returned", left)
				}
				waitGone(t, sup, 5*time.Second)
			})
		}
	}
}

// Between tasks a supervisor has no child: a task's background process
// and its double-forked setsid daemon are killed and reaped before Run
// returns, and the next task on the same supervisor finds it with no
// other child than itself.
func TestPoolNoLeftoverBetweenTasks(t *testing.T) {
	pool := NewPool(1)
	defer pool.Close()
	p := policyFor(t, IsolationNone, "sh")
	marker := fmt.Sprintf("300.%d", os.Getpid()) // sleep takes a fraction: an argv no other process has
	t.Cleanup(func() {
		left, _ := systest.PidsWithArg(marker)
		for _, pid := range left {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	})
	res, first := runOn(t, pool, p, `sh -c 'setsid sleep `+marker+` >/dev/null 2>&1 & sleep `+marker+` >/dev/null 2>&1 &'
		while [ "$(cat /proc/$PPID/task/*/children | wc -w)" -lt 3 ]; do sleep 0.01; done; echo spawned`)
	if res.Output != "spawned\n" {
		t.Fatalf("first task: %s %q", res.Status, res.Output)
	}
	if left, _ := systest.PidsWithArg(marker); len(left) != 0 {
		t.Fatalf("processes %v of the first task still exist after its Run returned", left)
	}
	res, second := runOn(t, pool, p, `cat /proc/$PPID/task/*/children | tr -s ' \n' ' '; echo "| $$"`)
	if second != first {
		t.Fatalf("the second task ran on supervisor %d, not the first's %d: the test proves nothing", second, first)
	}
	kids, self, _ := strings.Cut(strings.TrimSpace(res.Output), "|")
	if strings.TrimSpace(kids) != strings.TrimSpace(self) {
		t.Errorf("the supervisor's children during the second task: %q; want only the task itself (%s)", kids, self)
	}
}

// probeState is what a task can see of what it inherited: its signal
// dispositions and mask, resource limits, nice value, CPU affinity,
// working directory, environment and descriptors.
const probeState = `grep -E '^(SigBlk|SigIgn|SigCgt|Cpus_allowed_list):' /proc/self/status; ulimit -a; cut -d' ' -f19 /proc/self/stat; pwd -P; env | sort; ls /proc/self/fd | tr '\n' ' '; echo; chrt -p $$ 2>&1 | sed 's/.*: //'; ionice -p $$ 2>&1; cat /proc/self/oom_score_adj /proc/self/timerslack_ns 2>&1`

// Nothing a task changes in itself reaches the next task on the same
// supervisor, and what a task changes in its supervisor (limits, nice,
// affinity: it runs as the same user) makes the supervisor retire: the
// next task runs on a fresh one and sees what a task on a supervisor of
// its own sees.
func TestPoolStateDoesNotLeak(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh")
	want, _ := runOn(t, nil, p, probeState)
	if want.Status != StatusSucceeded {
		t.Fatalf("probe: %s %q", want.Status, want.Output)
	}
	pool := NewPool(1)
	defer pool.Close()
	// Changes to the task's own process: the supervisor stays.
	_, sup := runOn(t, pool, p, `trap '' INT HUP; ulimit -n 100; renice -n 5 $$ >/dev/null; cd /; export LEAK=1; exec 7>/dev/null 8</dev/null; umask 077; true`)
	got, again := runOn(t, pool, p, probeState)
	if again != sup {
		t.Fatalf("the probe ran on supervisor %d, not %d: the test proves nothing", again, sup)
	}
	if got.Output != want.Output {
		t.Errorf("after a task changed itself, the next task on its supervisor sees\n%s\nwant\n%s", got.Output, want.Output)
	}
	for _, c := range []struct{ name, script string }{
		{"prlimit", `prlimit --pid $PPID --nofile=64:64`},
		{"renice", `renice -n 3 -p $PPID >/dev/null`},
		{"taskset", `taskset -p 1 $PPID >/dev/null`},
		// Scheduling and I/O priority, of the thread that forks the
		// tasks and of every other thread of the supervisor.
		{"chrt", `chrt -i -p 0 $PPID`},
		{"chrt-all", `chrt -a -i -p 0 $PPID`},
		{"chrt-batch", `chrt -a -b -p 0 $PPID`},
		{"ionice", `ionice -c3 -p $PPID`},
		{"ionice-thread", `for t in /proc/$PPID/task/*; do ionice -c2 -n7 -p ${t##*/}; done`},
		{"renice-thread", `for t in /proc/$PPID/task/*; do renice -n 2 -p ${t##*/} >/dev/null; done`},
		// Root only: the OOM score and the cgroup of a non-dumpable
		// process are root's to change.
		{"oom_score_adj", `echo 500 > /proc/$PPID/oom_score_adj`},
		{"cgroup", `echo $PPID > "$CG/cgroup.procs"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool, _, _ := strings.Cut(c.name, "-")
			if tool == "oom_score_adj" || tool == "cgroup" {
				if os.Geteuid() != 0 {
					t.Skip("root only")
				}
				tool = "sh"
			}
			script := c.script
			if c.name == "cgroup" {
				script = strings.ReplaceAll(script, "$CG", testCgroup(t))
			}
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not on PATH (Debian: util-linux)", tool)
			}
			res, changed := runOn(t, pool, p, script)
			if res.Status != StatusSucceeded {
				t.Fatalf("%s: %s %q", script, res.Status, res.Output)
			}
			got, next := runOn(t, pool, p, probeState)
			if next == changed {
				t.Errorf("the next task ran on the supervisor the task changed (%d)", changed)
			}
			if got.Output != want.Output {
				t.Errorf("after %s, the next task sees\n%s\nwant\n%s", c.script, got.Output, want.Output)
			}
		})
	}
}

// A supervisor refuses a message it does not expect and exits; the pool
// never reuses it.
func TestPoolProtocolError(t *testing.T) {
	null := func() int {
		fd, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	spec := func(s *shim.Spec) string { return string(s.Encode()) }
	run := func(spec string) []byte { return append([]byte{shim.ServeRun}, spec...) }
	good := &shim.Spec{Stage: stage.Spec{Path: "/bin/true", Argv: []string{"true"}}, Direct: true, Supervise: true}
	for _, c := range []struct {
		name  string
		data  []byte
		nfds  int
		error string // the report on the status pipe, if any
	}{
		{name: "too few descriptors", data: run(spec(good)), nfds: 2},
		{name: "too many descriptors", data: run(spec(good)), nfds: 8},
		{name: "not a run", data: append([]byte{'X'}, spec(good)...), nfds: 5},
		{name: "no spec", data: []byte{shim.ServeRun}, nfds: 5, error: "decode spec"},
		{name: "two runs", data: []byte{shim.ServeRun, shim.ServeRun}, nfds: 5, error: "spec protocol 82"},
		{name: "spec too long", data: run(spec(good) + strings.Repeat(" ", shim.MaxServeSpec)), nfds: 5},
		{name: "unknown field", data: run(spec(good) + "\x7f"), nfds: 5, error: "unknown field"},
		{name: "bad spec", data: run("\x01"), nfds: 5, error: "spec protocol 1"},
		{name: "pid namespace", data: run(spec(&shim.Spec{Stage: good.Stage, Direct: true, PIDNS: true})), nfds: 5, error: "another PID namespace"},
		{name: "stderr mismatch", data: run(spec(good)), nfds: 6, error: "6 descriptors"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pool := NewPool(1)
			defer pool.Close()
			sup, ok, err := pool.get(supKind{})
			if !ok || err != nil {
				t.Fatalf("get: %v %v", ok, err)
			}
			statusR, statusW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer statusR.Close()
			var fds []int
			for i := range c.nfds {
				switch i {
				case shim.ServeStatus:
					fds = append(fds, int(statusW.Fd()))
				case shim.ServeDir:
					fds = append(fds, int(dir.Fd()))
				default:
					fds = append(fds, null())
				}
			}
			err = unix.Sendmsg(sup.sock, c.data, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
			statusW.Close()
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-sup.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the supervisor is still running after a bad message")
			}
			if !sup.ex.status.Exited() || sup.ex.status.ExitStatus() == 0 {
				t.Errorf("the supervisor ended with wait status %#x; want a non-zero exit", uint32(sup.ex.status))
			}
			b := make([]byte, 4096)
			n, _ := statusR.Read(b)
			if c.error != "" && !strings.Contains(string(b[:n]), c.error) {
				t.Errorf("status report %q; want it to mention %q", b[:n], c.error)
			}
			pool.put(sup, true)
			pool.mu.Lock()
			idle := len(pool.idle)
			pool.mu.Unlock()
			if idle != 0 {
				t.Errorf("the pool kept a supervisor that exited")
			}
		})
	}
}

// Close ends every idle supervisor; a run after Close starts a supervisor
// of its own.
func TestPoolClose(t *testing.T) {
	pool := NewPool(2)
	p := policyFor(t, IsolationNone, "sh")
	var sups []int
	done := make(chan int, 2)
	for range 2 {
		go func() {
			res, err := Run(context.Background(), p, sh(`echo $PPID; sleep 0.2`), Options{Pool: pool})
			if err != nil {
				done <- 0
				return
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(res.Output))
			done <- pid
		}()
	}
	sups = append(sups, <-done, <-done)
	if slices.Contains(sups, 0) || sups[0] == sups[1] {
		t.Fatalf("two concurrent runs on supervisors %v; want two", sups)
	}
	pool.Close()
	for _, pid := range sups {
		if running(pid) {
			t.Errorf("supervisor %d still running after Close", pid)
		}
	}
	_, own := runOn(t, pool, p, `true`)
	if got := cmdline(own); got != "" && got != shim.Arg0+" supervise " {
		t.Errorf("after Close the task's parent is %q; want a supervisor of its own", got)
	}
	pool.Close()
}

func TestPoolable(t *testing.T) {
	for _, c := range []struct {
		name string
		ip   isoPlan
		want bool
	}{
		{"none", isoPlan{}, true},
		{"landlock", isoPlan{landlock: 4, nnp: true, dropCaps: true}, true},
		{"rlimits", isoPlan{rlimits: []stage.Rlimit{{Name: "nofile"}}}, true},
		{"landlock as root (the exec stage's mount view)", isoPlan{landlock: 4, mountNS: true, view: stage.View{ReadOnly: true}}, true},
		{"strict", isoPlan{namespaces: true, view: stage.View{Proc: true, ReadOnly: true}}, false},
		{"network loopback (a network namespace of its own)", isoPlan{landlock: 4, netNS: true, netUser: true, loopback: true}, false},
	} {
		if got := poolable(&c.ip); got != c.want {
			t.Errorf("%s: poolable = %v, want %v", c.name, got, c.want)
		}
	}
	// Where this process cannot make a mount namespace (a container that
	// refuses it), landlock's view as root gets a supervisor of its own,
	// whose start falls back as best effort allows.
	saved := mountNSUsable
	t.Cleanup(func() { mountNSUsable = saved })
	mountNSUsable = func() error { return unix.EPERM }
	if poolable(&isoPlan{landlock: 4, mountNS: true, view: stage.View{ReadOnly: true}}) {
		t.Error("landlock as root is poolable where no mount namespace can be made")
	}
}

// testCgroup makes an empty cgroup v2 beside the runner's task cgroups,
// removed at the end of the test; it skips where the runner can make
// none.
func testCgroup(t *testing.T) string {
	t.Helper()
	parent, err := cgroupParent()
	if err != nil {
		t.Skipf("no cgroup: %v", err)
	}
	dir, err := os.MkdirTemp(parent, "execx-test-")
	if err != nil {
		t.Skipf("no cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Whatever was moved in is gone with its pool; wait for it.
		for deadline := time.Now().Add(systest.Deadline); unix.Rmdir(dir) == unix.EBUSY && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	})
	return dir
}

// SIGTERM, SIGINT or SIGHUP to a one-shot supervisor (Supervised, no
// pool) while its task runs kills the task and ends the supervisor, under
// none, landlock and strict: it catches them with internal/termsig, not
// os/signal, and must still act on each. The supervisor is found from
// outside, as the parent of the task's process; the task's own child
// must go too.
func TestOneShotSupervisorSignalled(t *testing.T) {
	for _, iso := range []Isolation{IsolationNone, IsolationLandlock, IsolationStrict} {
		for i, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
			t.Run(string(iso)+"/"+unix.SignalName(sig), func(t *testing.T) {
				switch iso {
				case IsolationLandlock:
					needLandlock(t)
				case IsolationStrict:
					needNamespaces(t)
				}
				p := policyFor(t, iso, "sh", "sleep")
				marker := fmt.Sprintf("301.%d%d", os.Getpid(), i)
				t.Cleanup(func() {
					left, _ := systest.PidsWithArg(marker)
					for _, pid := range left {
						_ = unix.Kill(pid, unix.SIGKILL)
					}
				})
				done := make(chan *Result, 1)
				go func() {
					res, _ := Run(context.Background(), p, sh(`sleep `+marker+` & exec sleep `+marker), Options{Supervised: true})
					done <- res
				}()
				var task []int
				deadline := time.Now().Add(10 * time.Second)
				for len(task) != 2 {
					if time.Now().After(deadline) {
						t.Fatal("the task did not start")
					}
					time.Sleep(5 * time.Millisecond)
					task, _ = systest.PidsWithArg(marker)
				}
				// The task's process (the shell, exec'd into sleep) and its
				// child: the supervisor is the parent of the one whose
				// parent is not the other.
				sup := 0
				for _, pid := range task {
					stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
					if err != nil {
						t.Fatal(err)
					}
					// pid (comm) state ppid ...: comm is "sleep" here
					f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
					if pp, err := strconv.Atoi(f[1]); err == nil && !slices.Contains(task, pp) {
						sup = pp
					}
				}
				if sup == 0 || sup == os.Getpid() {
					t.Fatalf("task %v: no supervisor found as its parent", task)
				}
				if err := unix.Kill(sup, sig); err != nil {
					t.Fatal(err)
				}
				select {
				case res := <-done:
					if res == nil || res.Status == StatusSucceeded {
						t.Errorf("task whose supervisor got %v: %+v; want it killed", sig, res)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("Run still running 20 s after its supervisor got %v", sig)
				}
				if left, _ := systest.PidsWithArg(marker); len(left) != 0 {
					t.Errorf("task processes %v left after Run returned", left)
				}
				waitGone(t, sup, 5*time.Second)
			})
		}
	}
}
