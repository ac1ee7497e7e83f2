//go:build linux

package execx

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

func needLandlock(t *testing.T) {
	t.Helper()
	if landlockABI() == 0 {
		t.Skip("Landlock is not available on this kernel")
	}
}

func needNamespaces(t *testing.T) {
	t.Helper()
	if c := Probe(); !(c.Namespaces.User && c.Namespaces.PID && c.Namespaces.Net) {
		t.Skipf("user/PID/net namespaces unavailable: %s", c.Namespaces.Error)
	}
}

// tcpListener accepts connections on loopback and counts them.
func tcpListener(t *testing.T) (port int, accepted func() int) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l.Addr().(*net.TCPAddr).Port, acceptCounter(t, l)
}

// udpListener receives datagrams on loopback and reports what arrived.
func udpListener(t *testing.T) (port int, received func() string) {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	got <- ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- <-got + string(buf[:n])
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c.LocalAddr().(*net.UDPAddr).Port, func() string {
		time.Sleep(50 * time.Millisecond) // let a datagram in flight land
		v := <-got
		got <- v
		return v
	}
}

// The probe script: a write inside the workspace, one in the private
// TMPDIR, one outside, a TCP connect and a UDP datagram to loopback. Each
// step prints ok or FAIL so one run shows everything.
func probeScript(outside string, tcpPort, udpPort int) string {
	return fmt.Sprintf(`
try() { if eval "$2" 2>/dev/null; then echo "$1 ok"; else echo "$1 FAIL"; fi; }
try inside 'echo x > inside.txt'
try tmpdir 'echo x > "$TMPDIR/t"'
try outside 'echo x > %s/outside.txt'
try tcp 'exec 3<>/dev/tcp/127.0.0.1/%d'
try udp 'echo datagram > /dev/udp/127.0.0.1/%d'
`, outside, tcpPort, udpPort)
}

func probeRun(t *testing.T, iso Isolation, opt Options) (map[string]bool, *Result, func() int, func() string, string) {
	t.Helper()
	p := policyFor(t, iso, "bash")
	p.EnvAllow = []string{"PATH", "TMPDIR"}
	outside := t.TempDir()
	tcpPort, accepted := tcpListener(t)
	udpPort, received := udpListener(t)
	res := mustRun(t, p, NewTask("bash", "-c", probeScript(outside, tcpPort, udpPort)), opt)
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		name, verdict, _ := strings.Cut(line, " ")
		got[name] = verdict == "ok"
	}
	if _, err := os.Stat(filepath.Join(p.Workspace, "inside.txt")); (err == nil) != got["inside"] {
		t.Errorf("%s: inside.txt exists=%v but the script said %v", iso, err == nil, got["inside"])
	}
	return got, res, accepted, received, outside
}

// Without isolation everything in the probe works: the test can fail.
func TestProbeScriptBaseline(t *testing.T) {
	got, res, accepted, received, outside := probeRun(t, IsolationNone, Options{})
	for _, step := range []string{"inside", "tmpdir", "outside", "tcp", "udp"} {
		if !got[step] {
			t.Errorf("isolation none: %s failed; output:\n%s", step, res.Output)
		}
	}
	if accepted() != 1 || received() != "datagram\n" {
		t.Errorf("isolation none: listener saw %d connections, %q; want 1 and the datagram", accepted(), received())
	}
	if _, err := os.Stat(filepath.Join(outside, "outside.txt")); err != nil {
		t.Errorf("isolation none: outside write missing: %v", err)
	}
}

func TestLandlock(t *testing.T) {
	needLandlock(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			got, res, accepted, _, outside := probeRun(t, IsolationLandlock, m.opt)
			if !got["inside"] || !got["tmpdir"] {
				t.Errorf("landlock: writes in the workspace and TMPDIR must work; output:\n%s", res.Output)
			}
			if got["outside"] {
				t.Errorf("landlock: a write outside the workspace succeeded")
			}
			if _, err := os.Stat(filepath.Join(outside, "outside.txt")); err == nil {
				t.Errorf("landlock: outside.txt was created")
			}
			if landlockABI() >= 4 && (got["tcp"] || accepted() != 0) {
				t.Errorf("landlock ABI %d: TCP connect to loopback succeeded (%d accepted)", landlockABI(), accepted())
			}
			want := wantLandlockLayers()
			if !slices.Equal(res.Isolation.Enforced, want) || res.Isolation.Backend != IsolationLandlock {
				t.Errorf("enforced = %v; want %v", res.Isolation.Enforced, want)
			}
		})
	}
}

// Landlock is applied to the thread that forks the task, which is then
// destroyed: the runner itself stays unrestricted, on every thread.
func TestLandlockLeavesRunnerUnrestricted(t *testing.T) {
	needLandlock(t)
	p := policyFor(t, IsolationLandlock, "true")
	for range 5 {
		mustRun(t, p, NewTask("true"), Options{})
	}
	dir := t.TempDir()
	errs := make(chan error, 50)
	for i := range 50 {
		go func() {
			runtime.LockOSThread() // spread over threads, some possibly reused
			defer runtime.UnlockOSThread()
			errs <- os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), []byte("x"), 0o644)
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatalf("the runner lost write access outside the workspace: %v", err)
		}
	}
}

// strict: no network at all, not even loopback TCP or UDP; the program is
// in its own PID namespace (its supervisor is PID 1); leftovers die with it.
func TestStrict(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	got, res, accepted, received, _ := probeRun(t, IsolationStrict, Options{})
	if !got["inside"] || got["outside"] {
		t.Errorf("strict: filesystem confinement wrong; output:\n%s", res.Output)
	}
	if got["tcp"] || got["udp"] || accepted() != 0 || received() != "" {
		t.Errorf("strict: network reached loopback (tcp %v udp %v accepted %d received %q)", got["tcp"], got["udp"], accepted(), received())
	}
	for _, f := range []string{"namespace.user", "namespace.pid", "namespace.net", "no_new_privs", "landlock.fs"} {
		if !slices.Contains(res.Isolation.Enforced, f) {
			t.Errorf("strict: enforced %v lacks %s", res.Isolation.Enforced, f)
		}
	}
	// $$ is the pid in the task's namespace and /proc is the namespace's
	// own: PID 1 is the supervisor, and no process outside is listed. A
	// leftover must die with the task.
	p := policyFor(t, IsolationStrict, "sh")
	marker := "execx-strict-leftover-" + strconv.Itoa(os.Getpid())
	res = mustRun(t, p, sh(`echo $$; tr '\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'
		sh -c 'exec sleep 1000 '`+marker+` >/dev/null 2>&1 &`), Options{})
	lines := strings.Split(res.Output, "\n")
	if len(lines) < 3 || lines[1] != shim.Arg0+" supervise " {
		t.Errorf("strict: /proc/1 is not the supervisor: output %q", res.Output)
	} else if n, _ := strconv.Atoi(lines[2]); n == 0 || n > 10 {
		t.Errorf("strict: /proc lists %s processes; want only the task's few", lines[2])
	}
	if left, _ := systest.PidsWithArg(marker); len(left) > 0 {
		t.Errorf("strict: leftover %v survived the task", left)
	}
}

// wantLandlockLayers is what landlock adds to baseLayers (a read-only
// mount view only as root, where a mount namespace needs no user one).
func wantLandlockLayers() []string {
	want := slices.Clone(baseLayers)
	if os.Geteuid() == 0 && stage.HasCap(unix.CAP_SYS_ADMIN) {
		want = append(want, "namespace.mount", "mount.readonly", "mount.tmpdir")
	}
	want = append(want, "no_new_privs", "capabilities.drop")
	want = append(want, landlockFeatures(landlockABI())...)
	return append(want, "seccomp.ptrace", "seccomp.tty_inject", "seccomp.kernel", "seccomp.socket", "seccomp.sched", "seccomp.setid")
}

func TestRlimits(t *testing.T) {
	for _, m := range append(modes, struct {
		name string
		opt  Options
	}{"landlock+supervised", Options{Supervised: true}}) {
		t.Run(m.name, func(t *testing.T) {
			iso := IsolationNone
			if strings.HasPrefix(m.name, "landlock") {
				needLandlock(t)
				iso = IsolationLandlock
			}
			p := policyFor(t, iso, "bash")
			task := NewTask("bash", "-c", `ulimit -t; ulimit -f; ulimit -n; ulimit -v; ulimit -u; head -c 8192 /dev/zero > big; echo "head: $?"`)
			task.Limits.CPUSeconds = 7
			task.Limits.FileBytes = 4096
			task.Limits.OpenFiles = 64
			task.Limits.MemoryBytes = 1 << 30
			task.Limits.Processes = 500
			res := mustRun(t, p, task, m.opt)
			// -f in 1 KiB blocks, -v in KiB; 153 = 128+SIGXFSZ (bash also
			// reports the signal on stderr, between the two).
			want, wantEnd := "7\n4\n64\n1048576\n500\n", "head: 153\n"
			if !strings.HasPrefix(res.Output, want) || !strings.HasSuffix(res.Output, wantEnd) {
				t.Errorf("limits seen by the program:\n%s\nwant\n%s", res.Output, want)
			}
			if st, err := os.Stat(filepath.Join(p.Workspace, "big")); err != nil || st.Size() != 4096 {
				t.Errorf("file_bytes 4096: big is %v bytes (%v)", st.Size(), err)
			}
			for _, f := range []string{"rlimit.cpu", "rlimit.fsize", "rlimit.nofile", "rlimit.as"} {
				if !slices.Contains(res.Isolation.Enforced, f) {
					t.Errorf("enforced %v lacks %s", res.Isolation.Enforced, f)
				}
			}
			if slices.Contains(res.Isolation.Enforced, "rlimit.nproc") == (os.Geteuid() == 0) {
				t.Errorf("enforced %v: rlimit.nproc must be listed only when not root", res.Isolation.Enforced)
			}
		})
	}
}

// A CPU-bound program is stopped by cpu_seconds with SIGXCPU.
func TestCPULimit(t *testing.T) {
	p := policyFor(t, IsolationNone, "sh")
	task := sh(`while :; do :; done`)
	task.Limits.CPUSeconds = 1
	res := mustRun(t, p, task, Options{})
	if res.Signal != "SIGXCPU" || res.Status != StatusFailed || res.Rusage.UserMS+res.Rusage.SysMS < 500 {
		t.Errorf("status %s signal %q rusage %+v; want failed by SIGXCPU after about a second of CPU (the kernel accounts in ticks)", res.Status, res.Signal, res.Rusage)
	}
}

// A kernel that refuses namespaces: strict is refused (125) unless best
// effort is allowed, and then the Result says exactly what it got.
func TestStrictWithoutNamespaces(t *testing.T) {
	needLandlock(t)
	refuseNamespaces(t)
	p := policyFor(t, IsolationStrict, "true")
	wantRefusal(t, p, NewTask("true"), exitcode.Internal, ErrIsolationUnavailable, "namespaces")
	p.IsolationBestEffort = true
	res := mustRun(t, p, NewTask("true"), Options{})
	want := append(slices.Clone(baseLayers), "no_new_privs", "capabilities.drop")
	want = append(want, landlockFeatures(landlockABI())...)
	want = append(want, "seccomp.ptrace", "seccomp.tty_inject", "seccomp.kernel", "seccomp.socket", "seccomp.socket.unix", "seccomp.sched", "seccomp.setid")
	if res.Status != StatusSucceeded || res.Isolation.Backend != IsolationStrict || !slices.Equal(res.Isolation.Enforced, want) ||
		len(res.Isolation.Dropped) != 1 || !strings.HasPrefix(res.Isolation.Dropped[0], "namespaces: ") {
		t.Errorf("best-effort strict without namespaces: %s %+v; want succeeded with %v and the namespaces dropped", res.Status, res.Isolation, want)
	}
}

// `artexec isolation` lists, per backend, exactly the layers a run of it
// reports as enforced.
func TestProbeMatchesRun(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	for _, b := range Probe().Backends {
		if !b.Available || b.Backend == IsolationSeatbelt {
			continue
		}
		res := mustRun(t, policyFor(t, b.Backend, "true"), NewTask("true"), Options{})
		if !slices.Equal(res.Isolation.Enforced, b.Enforces) {
			t.Errorf("%s: probe says %v, a run enforced %v", b.Backend, b.Enforces, res.Isolation.Enforced)
		}
	}
}
