//go:build linux

package execx

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// capBnd is the CapBnd line's value in /proc/PID/status (PID
// "thread-self" for the calling thread), or the test fails.
func capBnd(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CapBnd:\s*([0-9a-f]+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no CapBnd in /proc/%s/status", pid)
	}
	return string(m[1])
}

// A pooled supervisor for tasks that drop their capabilities starts with
// its bounding set emptied (all but the policy's keep_capabilities), from
// its forker thread's, so that their processes find nothing left to drop;
// and a task only ever runs on a supervisor of its own kind: a task under
// none, which keeps root's capabilities, never inherits an emptied
// bounding set, and a task that keeps a capability never one without it.
// Nor does anything this process starts afterwards, from whatever thread.
// Seen from outside: each task's CapBnd, and each supervisor's.
func TestPoolBoundingSetByKind(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("the bounding set is root's to drop")
	}
	// This thread's: the process's main thread may be a forker thread of
	// an earlier test's pool, which the Go runtime parks for good instead
	// of ending it (it never runs a goroutine again).
	full := capBnd(t, "thread-self")
	pool := NewPool(4)
	defer pool.Close()
	run := func(iso Isolation, keep ...string) string {
		t.Helper()
		p := policyFor(t, iso, "sh")
		p.KeepCapabilities = keep
		res := mustRun(t, p, sh("grep CapBnd /proc/self/status"), Options{Supervised: true, Pool: pool})
		if res.Status != StatusSucceeded {
			t.Fatalf("%s: %s %s", iso, res.Status, res.Output)
		}
		return strings.TrimSpace(strings.TrimPrefix(res.Output, "CapBnd:"))
	}
	supBnd := func() map[string]int {
		t.Helper()
		pool.mu.Lock()
		defer pool.mu.Unlock()
		seen := map[string]int{}
		for _, s := range pool.idle {
			seen[capBnd(t, strconv.Itoa(s.pid))]++
		}
		return seen
	}
	const keepChown = "0000000000000001" // CAP_CHOWN is capability 0
	steps := []struct {
		iso  Isolation
		keep []string
		want string
	}{
		{IsolationLandlock, nil, "0000000000000000"},
		{IsolationNone, nil, full},
		{IsolationLandlock, []string{"CAP_CHOWN"}, keepChown},
		{IsolationLandlock, nil, "0000000000000000"}, // the first one again
		{IsolationNone, nil, full},
	}
	for i, s := range steps {
		if got := run(s.iso, s.keep...); got != s.want {
			t.Errorf("step %d, %s keeping %v: the task's CapBnd %s; want %s", i, s.iso, s.keep, got, s.want)
		}
	}
	st := pool.Stats()
	if st.Started != 3 || st.Reused != 2 {
		t.Errorf("pool %+v: want 3 supervisors started (one a kind) and 2 reused", st)
	}
	want := map[string]int{"0000000000000000": 1, full: 1, keepChown: 1}
	if got := supBnd(); len(got) != len(want) || got["0000000000000000"] != 1 || got[full] != 1 || got[keepChown] != 1 {
		t.Errorf("the idle supervisors' CapBnd: %v; want one each of %v", got, want)
	}
	pool.Close() // the forkers end; their threads with them
	// Programs started afterwards, from any of this process's threads,
	// have its whole bounding set.
	for i := range 8 {
		out, err := exec.Command("grep", "CapBnd", "/proc/self/status").Output()
		if got := strings.TrimSpace(strings.TrimPrefix(string(out), "CapBnd:")); err != nil || got != full {
			t.Fatalf("a program started after the pool closed (%d): CapBnd %q, %v; want %s", i, got, err, full)
		}
	}
}

// capSets are the Cap* lines of out (one or more /proc status files),
// each value with its name, in order.
func capSets(out string) []string {
	return regexp.MustCompile(`(?m)^Cap(Inh|Prm|Eff|Bnd|Amb):\s*[0-9a-f]+$`).FindAllString(out, -1)
}

// The attack on the pooled capability drop, from inside the task: its
// supervisor's own inheritable set is full (raised so the supervisor
// keeps its capabilities with an emptied bounding set), so a task tries
// to get it back — its own five sets, and a program carrying every file
// capability (permitted and inheritable) it executes. Seen from outside
// in the Result: every set empty, in the first task of a pooled
// supervisor and the next one, as under bwrap --unshare-all --cap-drop
// ALL, the peer, for root (bwrap keeps root's capabilities by default).
func TestPooledTaskGetsNoCapabilities(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("file capabilities and the bounding set are root's")
	}
	capcat := filepath.Join(t.TempDir(), "capcat")
	b, err := os.ReadFile("/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capcat, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// struct vfs_cap_data, revision 2: all of the first 32 and next 9
	// capabilities permitted and inheritable, not effective (an effective
	// one whose capabilities cannot all be granted is refused outright:
	// the attack would not get to print what it got).
	xattr := []byte{0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0xff, 0x01, 0, 0}
	if err := unix.Setxattr(capcat, "security.capability", xattr, 0); err != nil {
		t.Skipf("file capabilities: %v", err)
	}
	script := "grep ^Cap /proc/self/status; " + capcat + " /proc/self/status | grep ^Cap"
	check := func(who, out string) {
		t.Helper()
		sets := capSets(out)
		if len(sets) != 10 {
			t.Fatalf("%s: %d capability lines; want 10:\n%s", who, len(sets), out)
		}
		for _, s := range sets {
			if !strings.HasSuffix(s, "\t0000000000000000") {
				t.Errorf("%s: %s; want every set empty", who, s)
			}
		}
	}
	pool := NewPool(1)
	defer pool.Close()
	p := policyFor(t, IsolationLandlock, "sh", "grep")
	for i := range 2 {
		res := mustRun(t, p, sh(script), Options{Supervised: true, Pool: pool})
		check("pooled landlock task "+strconv.Itoa(i), res.Output)
	}
	if st := pool.Stats(); st.Reused != 1 {
		t.Errorf("pool %+v: want the second task on the first task's supervisor", st)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Log("no bwrap: the peer's row is left out")
		return
	}
	// bwrap run by root keeps root's capabilities unless told to drop
	// them (logged); with --cap-drop ALL, what a careful user asks for,
	// it must match.
	bw := func(extra ...string) string {
		t.Helper()
		args := append([]string{"--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"}, extra...)
		out, err := exec.Command("bwrap", append(args, "sh", "-c", script)...).CombinedOutput()
		if err != nil {
			t.Fatalf("bwrap %q: %v\n%s", extra, err, out)
		}
		return string(out)
	}
	t.Logf("bwrap --unshare-all, capabilities left as they are: %q", capSets(bw()))
	check("bwrap --unshare-all --cap-drop ALL", bw("--cap-drop", "ALL"))
}
