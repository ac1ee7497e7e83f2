//go:build linux

package execx

import (
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
)

// survivorScript is the patient attacker's cleanup race: it sets its
// supervisor ($PPID; PID 1 of its namespace under strict) to SCHED_IDLE,
// where it may, and leaves behind two processes (as many as the cores
// of a small CI machine, so an idle-class supervisor starves) that each
// fork, start a new session and exit in a tight loop, so their pids and
// process groups keep changing. They hold the output pipe: the runner
// waits its grace for EOF (survivorGrace) while their exited parents
// pile up as zombies of the supervisor. The program itself exits 0 at
// once. Every process of the chains carries MARKER in its command line.
// Each chain stops forking 20 s after it began ($^T), so a survivor that
// does escape cannot keep forking on the host after the test.
const survivorScript = `chrt -i -p 0 $PPID 2>/dev/null && echo SUPERVISOR-IDLE
for i in 1 2; do
	perl -MPOSIX -e 'while (time < $^T + 20) { my $p = fork; exit 0 if $p; POSIX::setsid() if defined $p; }' MARKER </dev/null &
done
sleep 0.2
exit 0`

// survivorGrace is the task's grace for its output pipe: the time the
// chains pile up zombies of the supervisor before the cleanup starts
// (long enough for hundreds; short enough that 120 tries fit the
// package's test timeout under -race).
const survivorGrace = 500 * time.Millisecond

// soakTries is how many times a race test runs its race: full (what its
// claim is stated for: the survivor race 20 times per mode, the swap
// races 25) when EXECX_SOAK is set — make crash runs them so, with
// EXECX_SOAK=1 — else short, enough to catch a regression that lets
// the attack through most of the time within make test's budget. env, if
// set to a positive number, overrides both.
func soakTries(env string, short, full int) int {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
		return n
	}
	if os.Getenv("EXECX_SOAK") != "" {
		return full
	}
	return short
}

// A survivor cannot outrun the cleanup: after Run returns, no process of
// the task is left, in any mode and as root and an unprivileged user,
// checked from outside (the chain's marker in /proc) every try; and a
// task that did leave one is never reported as a clean success.
func TestSurvivorCannotOutrunCleanup(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl not on PATH")
	}
	e := newAttackEnv(t)
	tries := soakTries("EXECX_SURVIVOR_TRIES", 3, 20)
	for _, u := range attackUsers() {
		for _, mode := range []string{"none", "landlock", "strict"} {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				if mode != "none" {
					needLandlock(t)
				}
				if mode == "strict" {
					needNamespaces(t)
				}
				idle, cgroups, counted := 0, 0, 0
				for i := range tries {
					marker := fmt.Sprintf("execx-survivor-%d-%s-%s-%d", os.Getpid(), u.name, mode, i)
					ws, err := os.MkdirTemp("", "execx-survivor-")
					if err != nil {
						t.Fatal(err)
					}
					_ = os.Chown(ws, u.uid(), u.gid())
					script := strings.ReplaceAll(survivorScript, "MARKER", marker)
					cfg := attackRunner{Mode: mode, WS: ws, Bin: e.bin, Program: "sh", Args: []string{"-c", script}, Grace: survivorGrace}
					rep, _ := runAttackRunner(t, e, u, cfg, "survivor")
					os.RemoveAll(ws)
					if strings.Contains(rep.Output, "SUPERVISOR-IDLE") {
						idle++
					}
					left, _ := systest.PidsWithArg(marker)
					if len(left) > 0 {
						killChain(marker)
						if rep.Status == string(StatusSucceeded) {
							t.Errorf("try %d: processes %v of the task outlived it, yet the Result says %s (leftover %d)", i, left, rep.Status, rep.Leftover)
						}
						// One escape is the answer: more tries would only
						// load the machine with more chains.
						t.Fatalf("%s as %s: a survivor outlived the run at try %d of %d", mode, u.name, i+1, tries)
					}
					if slices.Contains(rep.Enforced, "cgroup") {
						cgroups++
						if rep.Killed > 0 {
							counted++
						}
					}
					if rep.Leftover > 0 && rep.Status == string(StatusSucceeded) {
						t.Errorf("try %d: leftover %d with status %s", i, rep.Leftover, rep.Status)
					}
				}
				t.Logf("%s as %s: 0 escapes in %d tries (supervisor set to SCHED_IDLE in %d; a cgroup in %d, killed_at_end > 0 in %d)",
					mode, u.name, tries, idle, cgroups, counted)
				// The chains run when the program ends: a task with a
				// cgroup counts them as killed at the end (all but a
				// rare try where a chain had not started or had died).
				if cgroups > 0 && counted == 0 {
					t.Errorf("%s as %s: %d tries with a cgroup, none counted a process killed at the end", mode, u.name, cgroups)
				}
			})
		}
	}
}

// killChain ends a fork-and-exit chain that got away, by its marker:
// each process is stopped first (a stopped process forks no more), then
// killed, until none is seen for a while.
func killChain(marker string) {
	quiet := 0
	for deadline := time.Now().Add(30 * time.Second); quiet < 20 && time.Now().Before(deadline); {
		pids, _ := systest.PidsWithArg(marker)
		if len(pids) == 0 {
			quiet++
			time.Sleep(time.Millisecond)
			continue
		}
		quiet = 0
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGSTOP)
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
}
