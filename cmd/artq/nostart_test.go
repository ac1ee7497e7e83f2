package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx/shim"
)

// TestNoStartAfterWorkerDiedHoldingTask puts the worker's death exactly
// where a timed kill can only hope to land: between the moment the
// supervisor holds the task and the moment it starts it. The worker's
// pooled supervisor is frozen (the cgroup v1 freezer: a SIGSTOP the pool
// would see and answer with a new supervisor) while idle; a task is
// enqueued and claimed, so the worker hands it over into the frozen
// supervisor's socket; the worker is killed and reaped; only then does the
// supervisor thaw, finding the task and a dead runner. The task must never
// run. (TestNoStartAfterWorkerKilled times kills at random instead; under
// load a kill can land after the supervisor's check, which
// scripts/crash.sh's soak counts.)
func TestNoStartAfterWorkerDiedHoldingTask(t *testing.T) {
	for k := range 3 {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			root := t.TempDir()
			dir, ws := filepath.Join(root, "q"), filepath.Join(root, "ws")
			os.Mkdir(ws, 0o700)
			logPath := filepath.Join(dir, "events.log")
			waitLog := func(what string) {
				t.Helper()
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
					if data, _ := os.ReadFile(logPath); bytes.Contains(data, []byte(what)) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %s in the log within 20s", what)
					}
				}
			}
			enqueue := func(id string) {
				t.Helper()
				if out, err := artqCmd(dir, "enqueue", "--id", id, "--", "sh", "-c", `echo "$ARTQ_TASK_ID" >> marks`).CombinedOutput(); err != nil {
					t.Fatalf("enqueue: %v: %s", err, out)
				}
			}
			enqueue("warm")
			w := artqCmd(dir, "work", "--allow", "sh", "--workspace", ws, "--poll", "5ms", "-q")
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			reaped := false
			defer func() {
				if !reaped {
					w.Process.Kill()
					w.Wait()
				}
			}()
			waitLog(`"type":"succeeded","task":"warm"`)
			sup := pooledSupervisor(t, w.Process.Pid)
			thaw := freeze(t, sup)
			defer thaw()
			enqueue("late")
			waitLog(`"type":"started","task":"late"`)
			// The hand-over follows the claim's record; the stopped
			// supervisor cannot answer it, so the worker waits there.
			time.Sleep(300 * time.Millisecond)
			w.Process.Kill()
			w.Wait()
			reaped = true
			thaw()
			time.Sleep(500 * time.Millisecond)
			marks, _ := os.ReadFile(filepath.Join(ws, "marks"))
			if got := strings.Fields(string(marks)); len(got) != 1 || got[0] != "warm" {
				t.Fatalf("marks %q: the task the dead worker had handed over started after it died", got)
			}
		})
	}
}

// freeze freezes process pid, all its threads, in a cgroup v1 freezer group of its own and
// returns the thaw; the test skips where there is no such freezer or it
// may not use it (not root).
func freeze(t *testing.T, pid int) (thaw func()) {
	t.Helper()
	const root = "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(filepath.Join(root, "freezer.state")); err != nil && !os.IsNotExist(err) || os.Geteuid() != 0 {
		t.Skip("needs root and a cgroup v1 freezer at " + root)
	}
	if _, err := os.Stat(root + "/tasks"); err != nil {
		t.Skip("needs a cgroup v1 freezer at " + root)
	}
	dir := filepath.Join(root, fmt.Sprintf("art-test-%d-%d", os.Getpid(), pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cgroup v1 freezer: %v", err)
	}
	write := func(file, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			t.Fatalf("freezer %s: %v", file, err)
		}
	}
	// cgroup.procs, not tasks: every thread of the process (tasks would
	// move one thread, and a pooled supervisor's goroutine is not locked
	// to its main thread).
	write("cgroup.procs", strconv.Itoa(pid))
	write("freezer.state", "FROZEN")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "freezer.state")); strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not freeze in 5s")
		}
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		write("freezer.state", "THAWED")
		// Back to the root group, so the group can go.
		if b, _ := os.ReadFile(filepath.Join(dir, "tasks")); len(b) > 0 {
			for _, p := range strings.Fields(string(b)) {
				os.WriteFile(filepath.Join(root, "tasks"), []byte(p), 0o644)
			}
		}
		os.Remove(dir)
	}
}

// pooledSupervisor is the pid of the one pooled supervisor (a child of the
// worker named shim.Arg0) of the worker with pid worker.
func pooledSupervisor(t *testing.T, worker int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		var found []int
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
			s := string(stat)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) < 2 || f[1] != strconv.Itoa(worker) {
				continue
			}
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.HasPrefix(cmd, []byte(shim.Arg0+"\x00serve")) {
				found = append(found, pid)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
	}
	t.Fatalf("worker %d has no single pooled supervisor", worker)
	return 0
}
