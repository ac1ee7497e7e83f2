//go:build linux

package stage

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// start runs NewChild and Start on a locked thread (the child's
// parent-death signal is tied to it) and waits for a started program.
func start(t *testing.T, s *Spec, spoil func(*Child)) (status unix.WaitStatus, err error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	null, nerr := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if nerr != nil {
		t.Fatal(nerr)
	}
	defer null.Close()
	fd := int(null.Fd())
	c, err := NewChild(s, [3]int{fd, fd, fd}, -1)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if spoil != nil {
		spoil(c)
	}
	pid, err := c.Start()
	if err != nil {
		return 0, err
	}
	if _, werr := unix.Wait4(pid, &status, 0, nil); werr != nil {
		t.Fatal(werr)
	}
	return status, nil
}

// A child that fails reports the step that failed and its errno, is
// reaped, and nothing of the program runs: execve's own failures (step
// "exec": missing, not executable, a directory) and any restriction the
// kernel refuses in the child (a limit, the Landlock ruleset, a seccomp
// program) — each judged from outside by the marker the program would
// have written.
func TestChildFailures(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := func() *Spec {
		return &Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "touch " + marker}, NNP: true}
	}
	badFilter := make([]byte, 8) // one instruction, opcode 0: not a valid program end
	// A view whose writable trees are dir (where the marker goes) and
	// tree, held open here before swap changes what the paths name.
	tree, link, other := filepath.Join(dir, "tree"), filepath.Join(dir, "link"), t.TempDir()
	wd := cwd(t)
	tmpLink := filepath.Join(dir, "tmplink")
	if err := os.Symlink(other, tmpLink); err != nil {
		t.Fatal(err)
	}
	inView := func(cwd string, treePath string, swap func()) func(*Child) {
		return func(c *Child) {
			rw := []int{holdDir(t, dir), holdDir(t, tree)}
			swap()
			if err := c.InView(&View{ReadOnly: true, RW: []string{dir, treePath}, Cwd: cwd}, rw); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkTree := func() {
		os.RemoveAll(tree)
		os.Remove(link)
		if err := os.Mkdir(tree, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		spec  func() *Spec
		spoil func(*Child)
		step  string
		errno error
	}{
		{"missing program", func() *Spec { s := sh(); s.Path = filepath.Join(dir, "missing"); return s }, nil, "exec", unix.ENOENT},
		{"not executable", func() *Spec { s := sh(); s.Path = noexec; return s }, nil, "exec", unix.EACCES},
		{"directory", func() *Spec { s := sh(); s.Path = dir; return s }, nil, "exec", unix.EACCES},
		{"bad limit", func() *Spec {
			s := sh()
			s.Rlimits = []Rlimit{{Name: "nofile", Resource: unix.RLIMIT_NOFILE, Value: 64}}
			return s
		}, func(c *Child) { c.rlimits[0].resource = 4096 }, "rlimit nofile", unix.EINVAL},
		{"bad address-space limit", func() *Spec {
			s := sh()
			s.Rlimits = []Rlimit{{Name: "nofile", Resource: unix.RLIMIT_NOFILE, Value: 64}, {Name: "as", Resource: unix.RLIMIT_AS, Value: 1 << 40}}
			return s
		}, func(c *Child) { c.rlimits[1].resource = 4096 }, "rlimit as", unix.EINVAL},
		{"not a ruleset", sh, func(c *Child) {
			fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			c.ruleset = fd
		}, "landlock", unix.EBADFD},
		{"bad seccomp program", func() *Spec { s := sh(); s.Filters = [][]byte{badFilter}; return s }, nil, "seccomp", unix.EINVAL},
		{"private temp dir a symlink", func() *Spec { s := sh(); s.Landlock, s.PrivateTmp = LandlockABI(), tmpLink; return s }, nil,
			"landlock: rule " + tmpLink, unix.ENOTDIR},
		{"private temp dir missing", func() *Spec { s := sh(); s.Landlock, s.PrivateTmp = LandlockABI(), dir+"/gone"; return s }, nil,
			"landlock: rule " + dir + "/gone", unix.ENOENT},
		{"view: tree swapped", func() *Spec { mkTree(); return sh() }, inView(wd, tree, func() {
			if err := os.Rename(tree, tree+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(tree, 0o755); err != nil {
				t.Fatal(err)
			}
		}), "mount view: bind " + tree, errReplaced},
		{"view: tree now a symlink", func() *Spec { mkTree(); return sh() }, inView(wd, link, func() {
			if err := os.Symlink(tree, link); err != nil {
				t.Fatal(err)
			}
		}), "mount view: bind " + link, unix.ENOTDIR},
		{"view: cwd swapped", func() *Spec { mkTree(); return sh() }, inView(other, tree, func() {}),
			"mount view: working directory " + other, errCwdReplaced},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.name, "view:") && os.Geteuid() != 0 {
				t.Skip("a mount namespace needs root")
			}
			if strings.HasPrefix(c.name, "private temp dir") && LandlockABI() == 0 {
				t.Skip("no Landlock")
			}
			_, err := start(t, c.spec(), c.spoil)
			var se *Error
			if !errors.As(err, &se) || se.Step != c.step || !errors.Is(se.Err, c.errno) {
				t.Fatalf("Start = %v; want step %q, %v", err, c.step, c.errno)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran")
			}
			if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
				t.Fatalf("wait4 after the failure: %v; want ECHILD (the child reaped)", err)
			}
		})
	}
}

// Spec.PrivateTmp is writable to the landlocked program, from the rule
// its own process adds, and nothing else is: the program writes there and
// is refused beside it, seen from outside by the files it left.
func TestChildPrivateTmpRule(t *testing.T) {
	if LandlockABI() == 0 {
		t.Skip("no Landlock")
	}
	priv, other := t.TempDir(), t.TempDir()
	s := &Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo x > " + priv + "/in; echo x > " + other + "/out"},
		NNP: true, Landlock: LandlockABI(), PrivateTmp: priv}
	if _, err := start(t, s, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(priv, "in")); err != nil {
		t.Errorf("the private temp dir was not writable: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "out")); err == nil {
		t.Errorf("a directory beside it was writable")
	}
}

func cwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// holdDir opens dir as the runner holds a writable tree.
func holdDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// The two implementations of the mount view (View.Setup in Go, in the
// calling thread's namespace; childView.setup in the task's own process)
// leave the same mounts, as the task's mountinfo shows them: every mount
// point with its root, options and file system, in order — / read-only,
// the writable trees read-write, nosuid and nodev, a fresh /dev/shm, a
// fresh /proc.
func TestViewImplementationsAgree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace needs root")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Proc too, from a working directory that is not / (the test's
	// package directory): the child once mounted it at "proc" relative.
	// The fresh /dev/shm as the task's private temp dir, of its own size.
	v := &View{ReadOnly: true, Proc: true, RW: []string{a, b}, Tmp: true, TmpSize: 8 << 20, Cwd: cwd(t)}
	rw := []int{holdDir(t, a), holdDir(t, b)}
	// A tree under /dev/shm, which the fresh tmpfs covers, and one inside
	// it: the outer one is moved back on top of the tmpfs, the inner one
	// with it.
	var shmTree, shmInner string
	if st, err := os.Stat(ShmDir()); err == nil && st.IsDir() {
		if shmTree, err = os.MkdirTemp(ShmDir(), "art-view-"); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(shmTree)
		shmInner = filepath.Join(shmTree, "x", "inner")
		if err := os.MkdirAll(shmInner, 0o755); err != nil {
			t.Fatal(err)
		}
		v.RW = append(v.RW, shmInner, shmTree)
		rw = append(rw, holdDir(t, shmInner), holdDir(t, shmTree))
	}

	// Setup on a thread of its own, in a mount namespace of that thread's
	// own: its goroutine never unlocks it, so the thread ends with it.
	type result struct {
		mounts string
		err    error
	}
	inGo := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			inGo <- result{err: err}
			return
		}
		if err := v.Setup(rw); err != nil {
			inGo <- result{err: err}
			return
		}
		m, err := os.ReadFile("/proc/thread-self/mountinfo")
		inGo <- result{string(m), err}
	}()
	g := <-inGo
	if g.err != nil {
		t.Fatal(g.err)
	}

	// The child: the program prints the mountinfo of its own view.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := NewChild(&Spec{Path: "/bin/cat", Argv: []string{"cat", "/proc/self/mountinfo"}}, [3]int{0, int(w.Fd()), int(w.Fd())}, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.InView(v, rw); err != nil {
		t.Fatal(err)
	}
	pid, err := c.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	var ws unix.WaitStatus
	if _, werr := unix.Wait4(pid, &ws, 0, nil); err != nil || werr != nil || ws.ExitStatus() != 0 {
		t.Fatalf("cat mountinfo: %v %v, status %v", err, werr, ws)
	}

	for _, info := range []string{g.mounts, string(out)} {
		if !strings.Contains(info, " "+ShmDir()+" rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=8192k") {
			t.Errorf("no fresh %s of View.TmpSize in %q", ShmDir(), info)
		}
	}
	goMounts, childMounts := mounts(g.mounts), mounts(string(out))
	if !slices.Equal(goMounts, childMounts) {
		t.Errorf("the views differ:\nSetup: %q\nchild: %q", goMounts, childMounts)
	}
	wants := []string{"/ / ro,", a + " " + a + " rw,nosuid,nodev,", b + " " + b + " rw,nosuid,nodev,", "/ " + ShmDir() + " rw,nosuid,nodev,",
		"/ /proc rw,nosuid,nodev,noexec,"}
	if shmTree != "" {
		rel := strings.TrimPrefix(shmTree, ShmDir())
		wants = append(wants, rel+" "+shmTree+" rw,nosuid,nodev,", rel+"/x/inner "+shmInner+" rw,nosuid,nodev,")
	}
	for _, want := range wants {
		if !slices.ContainsFunc(childMounts, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("no mount %q in the child's view %q", want, childMounts)
		}
	}
}

// mounts is mountinfo reduced to what a view decides: each mount's root,
// mount point, options and file system (no IDs, which differ).
func mounts(info string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(info), "\n") {
		f := strings.Fields(l)
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		out = append(out, f[3]+" "+f[4]+" "+f[5]+" "+f[sep+1])
	}
	return out
}

// A spec that cannot be prepared fails in the parent, before any fork.
func TestNewChildRefuses(t *testing.T) {
	for _, c := range []struct {
		name, step string
		spec       Spec
	}{
		{"NUL in path", "exec", Spec{Path: "/bin/s\x00h", Argv: []string{"sh"}}},
		{"NUL in env", "exec", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Env: []string{"A=\x00"}}},
		{"unknown limit", "rlimit bogus", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Rlimits: []Rlimit{{Name: "bogus", Resource: 4096, Value: 1}}}},
		{"malformed filter", "seccomp", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Filters: [][]byte{make([]byte, 12)}}},
		{"trees without descriptors", "landlock", Spec{Path: "/bin/sh", Argv: []string{"sh"}, Landlock: max(LandlockABI(), 1), RW: []string{"/tmp"}}},
		{"capability out of range", "capabilities", Spec{Path: "/bin/sh", Argv: []string{"sh"}, DropCaps: true, KeepCaps: []int{64}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewChild(&c.spec, [3]int{0, 1, 2}, -1)
			var se *Error
			if !errors.As(err, &se) || se.Step != c.step {
				t.Fatalf("NewChild = %v; want a refusal at step %q", err, c.step)
			}
		})
	}
}

// The descriptors the program gets are exactly the three asked for (one
// of them twice), and none of the parent's others, even those the test
// process holds without close-on-exec.
func TestChildDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	s := &Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "ls /proc/self/fd; echo err >&2"}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := NewChild(s, [3]int{int(null.Fd()), int(w.Fd()), int(w.Fd())}, -1)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := c.Start()
	c.Close()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4096)
	n, _ := readFull(int(r.Fd()), out)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("wait: %v status %v", err, ws)
	}
	// ls lists 0 1 2 and its own directory descriptor (3).
	if got := strings.Fields(string(out[:n])); strings.Join(got, " ") != "0 1 2 3 err" {
		t.Errorf("program saw descriptors and stderr %q; want 0 1 2 3 (ls's own) and err", got)
	}
}
