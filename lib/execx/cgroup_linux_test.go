//go:build linux

package execx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestUnescapeMount(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/sys/fs/cgroup", "/sys/fs/cgroup"},
		{`/mnt/with\040space`, "/mnt/with space"},
		{`/a\011b\012c\134d`, "/a\tb\nc\\d"},
		{`/trailing\04`, `/trailing\04`}, // too short to be an escape
		{`/not\999octal`, `/not\999octal`},
	} {
		if got := unescapeMount(tt.in); got != tt.want {
			t.Errorf("unescapeMount(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzUnescapeMount(f *testing.F) {
	f.Add(`/mnt/with\040space`)
	f.Add(`\`)
	f.Fuzz(func(t *testing.T, s string) {
		got := unescapeMount(s)
		if len(got) > len(s) {
			t.Errorf("unescapeMount(%q) = %q: longer than its input", s, got)
		}
		if !strings.Contains(s, `\`) && got != s {
			t.Errorf("unescapeMount(%q) = %q: changed a string without escapes", s, got)
		}
	})
}

// The shortcut past mountinfo finds the directory mountinfo names, and
// no other.
func TestOwnCgroupShortcut(t *testing.T) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	_, path, ok := strings.Cut(string(own), "0::")
	if path, _, _ = strings.Cut(path, "\n"); !ok {
		t.Skip("not in a cgroup v2")
	}
	want, err := cgroupDirByMount(path)
	if err != nil {
		t.Skip(err)
	}
	// Both ways of telling (the cgroup ID, and cgroup.procs where the
	// kernel has no ID to give) agree on this process's cgroup, its
	// parent, a child cgroup and a plain directory.
	others := []string{t.TempDir()}
	if path != "/" {
		others = append(others, filepath.Dir(want))
	}
	if child := filepath.Join(want, fmt.Sprintf("own-test-%d", os.Getpid())); os.Mkdir(child, 0o755) == nil {
		t.Cleanup(func() { os.Remove(child) })
		others = append(others, child)
	}
	if !isOwnCgroup(want) || !listsSelf(want) {
		t.Errorf("isOwnCgroup(%s) = %v, listsSelf = %v for this process's cgroup", want, isOwnCgroup(want), listsSelf(want))
	}
	if own, ok := ownCgroupID(want); ok && !own {
		t.Errorf("ownCgroupID(%s) = false for this process's cgroup", want)
	} else if !ok {
		t.Logf("no cgroup ID here (kernel before 6.13?): cgroup.procs tells")
	}
	for _, dir := range others {
		own, _ := ownCgroupID(dir)
		if isOwnCgroup(dir) || listsSelf(dir) || own {
			t.Errorf("%s: isOwnCgroup %v, listsSelf %v, ownCgroupID %v; want false for another directory", dir, isOwnCgroup(dir), listsSelf(dir), own)
		}
	}
	if got, err := findCgroupParent(); err == nil && got != want {
		t.Errorf("findCgroupParent() = %s; mountinfo says %s", got, want)
	}
}

// printOwnCgroup prints what both routes to this process's cgroup
// directory find (TestOwnCgroupByHandle's child process).
func printOwnCgroup() int {
	byHandle, ok := ownCgroupByHandle()
	byPath, err := ownCgroupByPath()
	fmt.Printf("%s\n%v\n%s\n%v\n", byHandle, ok, byPath, err)
	return 0
}

// The handle route to the runner's own cgroup (its ID opened on the
// cgroup2 mount) finds the directory the path route does, for a process
// in the root cgroup and for one in a child cgroup; where it cannot tell
// (not root, before Linux 6.13) it says so and the path route decides.
func TestOwnCgroupByHandle(t *testing.T) {
	parent, err := cgroupParent()
	if err != nil {
		t.Skip(err)
	}
	if _, ok := ownCgroupByHandle(); !ok {
		t.Skip("no handle route here (not root, or a kernel before 6.13)")
	}
	child := filepath.Join(parent, fmt.Sprintf("own-handle-%d", os.Getpid()))
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.Remove(child) })
	cfd, err := os.Open(child)
	if err != nil {
		t.Fatal(err)
	}
	defer cfd.Close()
	for _, tc := range []struct {
		name string
		in   *os.File
		want string
	}{{"own cgroup", nil, parent}, {"child cgroup", cfd, child}} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "EXECX_TEST_OWN_CGROUP=1")
		if tc.in != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(tc.in.Fd())}
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := strings.Split(string(out), "\n")
		if len(got) < 4 || got[0] != tc.want || got[1] != "true" || got[2] != tc.want || got[3] != "<nil>" {
			t.Errorf("%s: by handle %q (ok %s), by path %q (%s); want %s both ways", tc.name, got[0], got[1], got[2], got[3], tc.want)
		}
	}
}

// The sweep removes an empty task cgroup of a runner that is gone and
// keeps one whose runner lives; with no child cgroup at all (the link
// count shortcut) it lists nothing and removes nothing.
func TestSweepCgroups(t *testing.T) {
	if !cgroupUsable() {
		t.Skip("the runner cannot make cgroups here")
	}
	parent, _ := cgroupParent()
	dir := filepath.Join(parent, fmt.Sprintf("execx-sweep-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { rmdirTree(dir) })
	sweepCgroups(dir) // no child cgroup: the shortcut
	// A pid no process has: one past the kernel's maximum.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip(err)
	}
	pidMax, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	dead := filepath.Join(dir, fmt.Sprintf("artexec-%d-1", pidMax+1))
	live := filepath.Join(dir, fmt.Sprintf("artexec-%d-1", os.Getppid()))
	other := filepath.Join(dir, "not-ours")
	for _, d := range []string{dead, live, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepCgroups(dir)
	for d, want := range map[string]bool{dead: false, live: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists after the sweep: %v; want %v", filepath.Base(d), err == nil, want)
		}
	}
}

// A task that left processes behind is never a success: status error,
// tool exit code 125, whatever the program's own code.
func TestLeftoverIsNoSuccess(t *testing.T) {
	for _, code := range []int{0, 3} {
		r := &Result{Status: StatusError, ExitCode: code, Leftover: 2}
		if got := r.CLICode(); got != exitcode.Internal {
			t.Errorf("leftover with exit %d: CLICode %d; want %d", code, got, exitcode.Internal)
		}
	}
}

// With a cgroup, every run says so and leaves no cgroup behind.
func TestTaskCgroupRemoved(t *testing.T) {
	if !cgroupUsable() {
		t.Skip("the runner cannot make cgroups here")
	}
	parent, _ := cgroupParent()
	p := policyFor(t, IsolationNone, "sh")
	res := mustRun(t, p, sh(`sleep 60 & setsid sh -c 'sleep 60 & wait' & cat /proc/self/cgroup`), Options{})
	if res.Status != StatusSucceeded || res.KilledAtEnd < 2 || res.Leftover != 0 {
		t.Errorf("status %s killed_at_end %d leftover %d; want succeeded, at least 2 killed, none left", res.Status, res.KilledAtEnd, res.Leftover)
	}
	if !strings.Contains(res.Output, "/artexec-") {
		t.Errorf("the task's cgroup: %q; want one of its own", res.Output)
	}
	name := strings.TrimSpace(res.Output[strings.LastIndex(res.Output, "/")+1:])
	if ents, _ := filepath.Glob(parent + "/" + name); len(ents) != 0 {
		t.Errorf("cgroup %s still exists after the run", name)
	}
}
