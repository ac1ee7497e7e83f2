//go:build linux

package execx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/jsonx"
)

// Every restriction is on the task's own process, as read from outside in
// /proc while it runs: its limits soft = hard, no_new_privs, seccomp mode 2
// with the plan's filters, an empty bounding set, and Landlock (a write
// outside its trees fails, as the file's absence outside shows, and a
// FIFO in the workspace, which only Landlock forbids (the policy names no
// workspace_nodes), is refused). Under landlock on a pool (root: the task builds its view
// itself between fork and execve) the task is in a mount namespace of its
// own, forked from a thread of the supervisor in the runner's namespace
// that outlives the task (the parent-death signal is tied to it), and no
// thread of the supervisor ever leaves that namespace — during the task
// and after it, while the same supervisor serves on.
func TestTaskRestrictedFromOutside(t *testing.T) {
	needLandlock(t)
	for _, c := range viewModes {
		t.Run(c.name, func(t *testing.T) {
			if c.iso == IsolationStrict {
				needNamespaces(t)
			}
			p := policyFor(t, c.iso, "sh")
			outside := t.TempDir()
			if err := os.Chmod(outside, 0o777); err != nil {
				t.Fatal(err)
			}
			token := fmt.Sprintf("restricted-%d", time.Now().UnixNano())
			task := sh(`: ` + token + `; echo > ready; while [ ! -e go ]; do sleep 0.01; done
echo x > ` + outside + `/f 2>/dev/null && echo wrote-outside
mkfifo fifo-` + token + ` || true`)
			task.Limits = Limits{Timeout: jsonx.Duration(time.Minute), OpenFiles: 64, FileBytes: 1 << 30, CPUSeconds: 100, MemoryBytes: 8 << 30}
			opt := Options{}
			if c.pool {
				pool := NewPool(1)
				defer pool.Close()
				opt = Options{Supervised: true, Pool: pool}
				mustRun(t, p, sh(`true`), opt) // the supervisor, warm
			}
			ip, err := planIsolation(p, &task.Limits, &opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan *Result, 1)
			go func() {
				res, _ := Run(context.Background(), p, task, opt)
				done <- res
			}()
			waitFile(t, filepath.Join(p.Workspace, "ready"))
			pid := descendantWith(t, token)
			status := readProc(t, pid, "status")
			for _, want := range []string{"NoNewPrivs:\t1\n", "Seccomp:\t2\n",
				fmt.Sprintf("Seccomp_filters:\t%d\n", len(ip.filters)), "CapBnd:\t0000000000000000\n",
				"CapEff:\t0000000000000000\n", "CapAmb:\t0000000000000000\n"} {
				if !strings.Contains(status, want) {
					t.Errorf("task %d's status lacks %q", pid, want)
				}
			}
			limits := readProc(t, pid, "limits")
			for _, want := range []string{`Max open files\s+64\s+64\s`, `Max file size\s+1073741824\s+1073741824\s`,
				`Max cpu time\s+100\s+101\s`, `Max address space\s+8589934592\s+8589934592\s`} {
				if !regexp.MustCompile(want).MatchString(limits) {
					t.Errorf("task %d's limits lack %s:\n%s", pid, want, limits)
				}
			}
			sup, forker := ppidOf(t, pid), 0
			if c.pool {
				forker = forkingThread(t, sup, pid)
				if nsOf(t, sup, forker) != nsOf(t, os.Getpid(), os.Getpid()) {
					t.Errorf("the task was forked from thread %d of supervisor %d, outside the runner's mount namespace", forker, sup)
				}
				supNS := sameMountNS(t, sup)
				if supNS != nsOf(t, os.Getpid(), os.Getpid()) {
					t.Errorf("supervisor %d is not in the runner's mount namespace", sup)
				}
				if nsOf(t, pid, pid) == supNS {
					t.Errorf("the task %d is in its supervisor's mount namespace; want one of its own", pid)
				}
			}
			unrestricted(t, sup)
			unrestricted(t, os.Getpid())
			writeFile(t, filepath.Join(p.Workspace, "go"), "")
			res := <-done
			if res == nil || res.Status != StatusSucceeded {
				t.Fatalf("result %+v", res)
			}
			if strings.Contains(res.Output, "wrote-outside") {
				t.Error("the task wrote outside its trees")
			}
			if _, err := os.Stat(filepath.Join(outside, "f")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file outside the trees: %v", err)
			}
			if !strings.Contains(res.Output, "Permission denied") {
				t.Errorf("output %q: the FIFO in the workspace was not refused by Landlock", res.Output)
			}
			if _, err := os.Lstat(filepath.Join(p.Workspace, "fifo-"+token)); err == nil {
				t.Error("the task made a FIFO in the workspace")
			}
			if c.pool {
				sameMountNS(t, sup)
				if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", sup, forker)); err != nil {
					t.Errorf("thread %d of supervisor %d, which forked the task (its parent-death signal is tied to it), is gone: %v", forker, sup, err)
				}
				if _, again := runOn(t, opt.Pool, p, `true`); again != sup {
					t.Errorf("next task on supervisor %d; want %d again (its state unchanged)", again, sup)
				}
			}
		})
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(systest.Deadline)
	for _, err := os.Stat(path); err != nil; _, err = os.Stat(path) {
		if time.Now().After(deadline) {
			t.Fatal("the task never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// descendantWith is the test's descendant whose command line holds token.
func descendantWith(t *testing.T, token string) int {
	t.Helper()
	for _, p := range shim.Descendants(os.Getpid()) {
		if strings.Contains(cmdline(p), token) {
			return p
		}
	}
	t.Fatalf("no process of the task (%s) among the test's descendants", token)
	return 0
}

func readProc(t *testing.T, pid int, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ppidOf(t *testing.T, pid int) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^PPid:\s+(\d+)$`).FindStringSubmatch(readProc(t, pid, "status"))
	if m == nil {
		t.Fatalf("no PPid for %d", pid)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func threads(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// forkingThread is the thread of pid whose children include child.
func forkingThread(t *testing.T, pid, child int) int {
	t.Helper()
	for _, tid := range threads(t, pid) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, tid))
		for _, f := range strings.Fields(string(b)) {
			if f == strconv.Itoa(child) {
				return tid
			}
		}
	}
	t.Fatalf("no thread of %d has %d as child", pid, child)
	return 0
}

func nsOf(t *testing.T, pid, tid int) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%d/ns/mnt", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sameMountNS is the mount namespace of every thread of pid, and fails
// the test if they are not all in the same one.
func sameMountNS(t *testing.T, pid int) string {
	t.Helper()
	ns := nsOf(t, pid, pid)
	for _, tid := range threads(t, pid) {
		if tns := nsOf(t, pid, tid); tns != ns {
			t.Errorf("thread %d of %d is in mount namespace %s, not the process's %s", tid, pid, tns, ns)
		}
	}
	return ns
}

// unrestricted fails the test if any thread of pid has no_new_privs or a
// seccomp filter.
func unrestricted(t *testing.T, pid int) {
	t.Helper()
	for _, tid := range threads(t, pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue // ended meanwhile
		}
		for _, want := range []string{"NoNewPrivs:\t0\n", "Seccomp:\t0\n"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("thread %d of %d lacks %q: a runner or supervisor thread is restricted", tid, pid, want)
			}
		}
	}
}
