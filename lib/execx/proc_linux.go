//go:build linux

package execx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// selfExe is how the runner re-executes itself as the shim (when no
// trusted artexec-shim is installed beside it, see shimExe): the running
// binary even if its file was replaced or deleted since.
func selfExe() string { return "/proc/self/exe" }

// childAttr is the direct child's start: a new session (no controlling
// terminal) and process group, and SIGKILL when the runner (the thread
// that started it) dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// wrapCommand is the program as started; other systems wrap it in a
// sandbox launcher.
func wrapCommand(pl *plan) (string, []string) { return pl.path, pl.argv }

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// ensureSubreaper makes the calling process a child subreaper, once: an
// orphaned descendant of a task (one that called setsid and whose parent
// exited) is then reparented to us, not to init, and can be found and
// killed when the task ends.
func ensureSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaperErr
}

// dirOf names the opened working directory so that the child's chdir
// (done between fork and exec, before file descriptors are rearranged)
// goes through the descriptor, never through a path that could have been
// swapped for a symlink since it was checked. Without /proc (a bare
// container) it falls back to the checked real path.
func dirOf(pl *plan) string {
	procFDOnce.Do(func() {
		_, err := os.Stat("/proc/self/fd")
		procFD = err == nil
	})
	if !procFD {
		return pl.dirPath
	}
	return "/proc/self/fd/" + strconv.Itoa(int(pl.dir.Fd()))
}

var (
	procFDOnce sync.Once
	procFD     bool
)

// hasChildren reports whether this process has any child at all, living
// or exited, without reaping one (WNOWAIT): no other waiter loses a status.
func hasChildren() bool {
	var info unix.Siginfo
	return unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) != unix.ECHILD
}

// bootTicks is now in the unit of /proc/PID/stat's start time: clock ticks
// (USER_HZ, 100 on every Linux) since boot. Taken before a child starts,
// it is no later than the child's start time, and needs no /proc read
// that could race with the child's exit.
func bootTicks() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano()) / (1e9 / 100)
}

// procStartTicks reads the start time (field 22 of /proc/PID/stat, clock
// ticks since boot).
func procStartTicks(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	t, err := strconv.ParseUint(string(f[19]), 10, 64)
	return t, err == nil
}

// startNamespaced starts the supervisor in its namespaces; a test replaces
// it to see what happens on a kernel that refuses them.
var startNamespaced = startInNamespaces

// startInNamespaces starts a supervisor whose clone makes a user
// namespace as a stage.Launch, which shares the runner's memory until
// the execve where Go's ForkExec would copy it (see stage.Launch), and
// any other with ForkExec, which shares it already. So is one started
// traced, to show the open-files limit ForkExec gives back (see
// startNofile; only where package startnofile cannot read it).
func startInNamespaces(path string, argv []string, attr *os.ProcAttr) (int, <-chan exitInfo, error) {
	if attr.Sys.Cloneflags&syscall.CLONE_NEWUSER == 0 || attr.Sys.Ptrace {
		return startProcess(path, argv, attr)
	}
	return startWith(launchSys, path, argv, attr)
}

// launchSys is syscall.ForkExec as a stage.Launch, for the attributes a
// supervisor is started with (setNamespaces, startSupervisedIn, the
// pool's serving supervisors); any other is refused, never ignored.
func launchSys(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	sys := attr.Sys
	if sys == nil || !sys.Setpgid || sys.Pgid != 0 || sys.Setsid || sys.Setctty || sys.Foreground || sys.Noctty ||
		sys.Credential != nil || sys.Chroot != "" || sys.Unshareflags != 0 || sys.UidMappings != nil ||
		sys.GidMappings != nil || sys.UseCgroupFD || sys.PidFD != nil || sys.Ptrace {
		return 0, fmt.Errorf("launch: process attributes a supervisor is not started with")
	}
	files := make([]int, len(attr.Files))
	for i, f := range attr.Files {
		files[i] = int(f)
	}
	c, err := stage.NewLaunch(&stage.Launch{Path: path, Argv: argv, Env: attr.Env, Dir: attr.Dir, Files: files,
		Cloneflags: sys.Cloneflags, AmbientCaps: sys.AmbientCaps, Pdeathsig: sys.Pdeathsig})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Start()
}

// superProc is a task under a supervisor shim (on Linux, every task):
// one started for it (and always for strict, where the shim is PID 1 of
// the new namespace), or a pooled one (sup, from pool) lent for the run.
type superProc struct {
	pid      int
	ctl      *os.File
	waited   <-chan exitInfo // a per-task shim's own end; read only by watch
	shimDone chan struct{}   // closed when the shim has been reaped, or a pooled one is done with the task
	exitC    chan exitInfo   // the task's main process
	exitOne  sync.Once

	sup       *poolSup
	pool      *Pool
	sawExited bool // read after shimDone
	sawIdle   bool
	discarded bool
	// reaped: the supervisor confirmed that no process of the task is
	// left (a per-task one by exiting 0 — it returns only once wait4
	// says ECHILD — a pooled one by reporting "idle" or "reaped"); read
	// after shimDone. pidns: the supervisor is PID 1 of the task's PID
	// namespace, whose end the kernel makes the end of every process in
	// it.
	reaped, pidns bool
	// supKilled: what the supervisor counted left of the task when it
	// killed it after the program ended; read after shimDone.
	supKilled int

	cg                    *taskCgroup // nil: the runner cannot make one
	killedAtEnd, leftover int         // set by finish
	uncounted             bool        // set by finish: leftover is a guess (see finish)
	tmpClean              *bool       // pooled: set by finish to whether the supervisor went back clean
}

// startSupervised starts the task under a supervisor: a pooled one when
// the run has a Pool and the supervisor needs nothing of the task
// (poolable), else one of its own, started with the program's stdin as
// its fd 0, the output pipe as fd 6 and a separate stderr pipe, if any,
// as fd 7 (the spec says which); its own stdout and stderr are /dev/null.
//
// Where the runner can make cgroups, the task gets one of its own (see
// taskCgroup), which the supervisor starts the program in.
func startSupervised(pl *plan, stdin, out, errw *os.File) (proc, error) {
	var cg *taskCgroup
	if pl.iso.cgroup {
		if cg = newTaskCgroup(); cg == nil { // the Result says so: no "cgroup" layer
			pl.iso.cgroup = false
			pl.iso.recompute(pl)
		}
	}
	pr, err := startSupervisedIn(pl, stdin, out, errw, cg)
	if err != nil && pl.iso.userNS && userNSRefused(err) {
		// The kernel or a security module refused the namespaces of an
		// unprivileged landlock run, which it did not ask for by name:
		// it runs as it would where they do not exist (the Result's
		// enforced list says which it got), and so do later runs of
		// this process.
		userNSFailed.Store(true)
		pl.iso.userNS, pl.iso.view = false, stage.View{}
		pl.iso.recompute(pl)
		if err = pl.runnerTmpdir(); err == nil {
			pr, err = startSupervisedIn(pl, stdin, out, errw, cg)
		}
	}
	if err != nil {
		cg.remove()
	}
	return pr, err
}

// runnerTmpdir: a run whose mount view was dropped has no tmpfs of the
// view's for its TMPDIR (isoPlan.taskTmp) any more, and gets one of the
// runner's making instead.
func (pl *plan) runnerTmpdir() error {
	if pl.iso.taskTmp == "" {
		return nil
	}
	pl.iso.taskTmp = ""
	if err := pl.iso.runnerTmpdir(pl.pool); err != nil {
		return err
	}
	for i, kv := range pl.env {
		if strings.HasPrefix(kv, "TMPDIR=") {
			pl.env[i] = "TMPDIR=" + pl.iso.tmpdir
		}
	}
	return nil
}

// userNSRefused: a start in isoPlan.userNS's namespaces failed at them —
// the clone, the ID maps or the mount view — before any process of the
// task existed.
func userNSRefused(err error) bool {
	if errors.Is(err, errNamespaces) {
		return true
	}
	var se *shim.Error
	return errors.As(err, &se) && se.NamespacesRefused()
}

// errNamespaces marks a supervisor whose clone into isoPlan.userNS's
// namespaces failed.
var errNamespaces = errors.New("cannot create the namespaces")

func startSupervisedIn(pl *plan, stdin, out, errw *os.File, cg *taskCgroup) (proc, error) {
	if pl.pool != nil && poolable(&pl.iso) {
		if pr, ok, err := startPooled(pl.pool, pl, stdin, out, errw, cg); ok {
			return pr, err
		}
	}
	sh, err := shim.NewPipes(true)
	if err != nil {
		return nil, err
	}
	defer sh.CloseAll()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "%s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	attr := &os.ProcAttr{
		Dir:   dirOf(pl),
		Env:   shim.Env,
		Files: []*os.File{stdin, devnull, devnull, sh.SpecR, sh.StatusW, sh.CtlR, out},
		// SIGTERM, not SIGKILL: a supervisor whose runner died kills the
		// whole task before it exits.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	// fd 7: nil (closed) without a stderr of its own; fd 8 (shim.NetFD):
	// under network allow, the socket pair's end over which the supervisor
	// sends the listener it makes in the task's network namespace, else
	// closed; the writable trees from shim.RWFD up.
	attr.Files = append(attr.Files, errw)
	var netMine, netTheirs *os.File
	if pl.iso.proxy {
		mine, theirs, err := proxyPair()
		if err != nil {
			return nil, err
		}
		defer theirs.Close()
		netMine, netTheirs = mine, theirs
		defer func() {
			if netMine != nil {
				netMine.Close()
			}
		}()
	}
	attr.Files = append(attr.Files, netTheirs)
	var cgDir *os.File // fd 9 (shim.CgroupFD): the task's cgroup, else closed
	if cg != nil {
		cgDir = cg.dir
	}
	attr.Files = append(attr.Files, cgDir)
	attr.Files = append(attr.Files, pl.rwFiles()...)
	setNamespaces(attr.Sys, &pl.iso)
	argv := []string{shim.Arg0, "supervise"}
	startFn := startProcess
	if attr.Sys.Cloneflags != 0 {
		startFn = startNamespaced
	}
	// The task needs the open-files limit this process started with, not
	// known yet: the supervisor is started stopped at its execve, where it
	// still has it (stopAtExec), instead of a probe child of its own.
	attr.Sys.Ptrace = pl.iso.needsNofile() && nofileUnknown()
	pid, waited, err := startFn(shimExe(), argv, attr)
	if err != nil && attr.Sys.Ptrace { // ptrace refused (Yama): as before, without
		attr.Sys.Ptrace = false
		pid, waited, err = startFn(shimExe(), argv, attr)
	}
	if err != nil && pl.iso.userNS {
		return nil, fmt.Errorf("supervisor: %w: %w", errNamespaces, err)
	}
	if err != nil && attr.Sys.Cloneflags != 0 {
		ip := &pl.iso
		if !ip.bestEffort {
			return nil, unavailable(ip.namespaceWhat(), fmt.Errorf("cannot create the namespaces: %w", err))
		}
		ip.dropNamespaces(pl, err)
		setNamespaces(attr.Sys, ip)
		pid, waited, err = startProcess(shimExe(), argv, attr)
	}
	if err != nil {
		return nil, err
	}
	sh.CloseChildEnds()
	sp := &superProc{pid: pid, waited: waited, cg: cg, pidns: attr.Sys.Cloneflags&syscall.CLONE_NEWPID != 0}
	spec := pl.shimSpec(true) // after a best-effort downgrade
	spec.Cgroup = cg != nil
	_, werr := sh.SpecW.Write(spec.Encode())
	pr, err := sp.begin(sh, werr)
	if err != nil || !pl.iso.proxy {
		return pr, err
	}
	l, err := recvListener(netMine)
	if err == nil {
		err = pl.startProxy(l) // the proxy holds its own copy of l
		l.Close()
	}
	if err != nil {
		sp.finish()
		return nil, err
	}
	return pr, nil
}

// begin takes over the status and control pipes of sh once the spec was
// written (werr: how that went), reads the shim's reports from their own
// goroutine and waits for the first: "started", or why not. The same
// goroutine then watches the task (one goroutine per run, not a reader
// and a watcher handing each report over).
func (sp *superProc) begin(sh *shim.Pipes, werr error) (proc, error) {
	sp.shimDone, sp.exitC = make(chan struct{}), make(chan exitInfo, 1)
	if sh.SpecW != nil { // a pooled supervisor got its spec in the serve message
		sh.SpecW.Close()
		sh.SpecW = nil
	}
	statusR := sh.StatusR
	sh.StatusR = nil
	sp.ctl = sh.CtlW
	sh.CtlW = nil
	type firstMsg struct {
		m  shim.Msg
		ok bool
	}
	firstC := make(chan firstMsg, 1)
	readerDone := make(chan struct{}) // a failed start: the reader saw EOF
	go func() {                       // the shim's reports, until it closes its status pipe
		defer statusR.Close()
		buf := statusBufs.Get().(*[]byte)
		defer statusBufs.Put(buf)
		sc := bufio.NewScanner(statusR)
		sc.Buffer(*buf, 1<<20)
		next := func() (m shim.Msg, ok bool) {
			for sc.Scan() {
				if decodeMsg(sc.Bytes(), &m) == nil {
					return m, true
				}
			}
			return m, false
		}
		m, ok := next()
		firstC <- firstMsg{m, ok}
		if !ok || m.Event != "started" {
			for _, more := next(); more; _, more = next() {
			}
			close(readerDone)
			return
		}
		sp.watch(next)
	}()
	first := <-firstC
	if !first.ok || first.m.Event != "started" {
		sp.ctl.Close()
		var ex exitInfo
		if sp.sup != nil { // never reused after a failed start
			ex = sp.sup.discard()
		} else {
			ex = <-sp.waited
		}
		<-readerDone
		switch {
		case first.ok && first.m.Event == "error":
			return nil, &shim.Error{Code: first.m.Code, Msg: first.m.Msg}
		case !first.ok && sp.sup != nil && ex.status.Exited() && ex.status.ExitStatus() == 0:
			return nil, errNeverStarted
		case werr != nil:
			return nil, exitcode.Errorf(exitcode.Internal, "supervisor: %w", werr)
		}
		return nil, exitcode.Errorf(exitcode.Internal, "supervisor %d exited before starting the task (wait status %#x)", sp.pid, uint32(ex.status))
	}
	return sp, nil
}

// watch turns the supervisor's "exited" report — or, if it dies without
// one, its own end — into the task's exit; next is its next report, false
// at EOF on the status pipe. A per-task supervisor is reaped; a pooled one
// is done with the task at EOF on the status pipe, and is discarded there
// if it did not report the exit (it was killed, or broke the protocol):
// its own end is then the task's.
func (sp *superProc) watch(next func() (shim.Msg, bool)) {
	defer func() {
		switch {
		case sp.sup == nil:
			ex := <-sp.waited // EOF: the shim closed its status pipe by exiting
			sp.reaped = ex.status.Exited() && ex.status.ExitStatus() == 0
			close(sp.shimDone)
			sp.exit(ex) // no-op if the task's exit was reported
		case !sp.sawExited:
			ex := sp.sup.discard()
			sp.discarded = true
			close(sp.shimDone)
			sp.exit(ex)
		default:
			close(sp.shimDone)
		}
	}()
	for m, ok := next(); ok; m, ok = next() {
		switch m.Event {
		case "exited":
			sp.sawExited = true
			sp.exit(exitInfo{
				status: syscall.WaitStatus(m.Status),
				rusage: syscall.Rusage{
					Utime:  syscall.NsecToTimeval(m.UserUS * 1000),
					Stime:  syscall.NsecToTimeval(m.SysUS * 1000),
					Maxrss: m.MaxRSS,
				},
			})
		case "idle":
			sp.sawIdle = sp.sawExited
			sp.reaped = true
		case "reaped":
			sp.reaped = true
		case "killed":
			sp.supKilled = m.Code
		}
	}
}

func (sp *superProc) exit(ex exitInfo) {
	sp.exitOne.Do(func() { sp.exitC <- ex })
}

func (sp *superProc) exited() <-chan exitInfo { return sp.exitC }

func (sp *superProc) signal(sig unix.Signal) {
	cmd := []byte{'T'}
	if sig == unix.SIGKILL {
		cmd[0] = 'K'
	}
	_, err := sp.ctl.Write(cmd)
	switch {
	case err == nil:
	case errors.Is(err, syscall.EPIPE):
		// The supervisor closed the control pipe: nothing of the task is
		// left (or the supervisor is gone, which watch sees).
	default:
		_ = unix.Kill(-sp.pid, sig) // the supervisor is gone or stuck: its group at least
	}
	if sig == unix.SIGKILL && sp.cg != nil {
		sp.cg.kill()
	}
}

// finish tells the supervisor to kill and reap everything left (by
// closing the control pipe: its EOF means exactly that) and waits
// until it is done with the task — a per-task one exits, a pooled one
// closes its status pipe — within reapWait; one that is not is killed
// with its group. A pooled supervisor goes back to its pool only when the
// run ended cleanly: it reported the exit and then "idle", in time, and
// was never stopped.
//
// With a cgroup, the runner does not leave the kill to the supervisor
// alone: it kills the cgroup at once (the supervisor may have been
// slowed down by the task) and counts what was in it and what is left
// once the cgroup is empty or reapWait passed. Without one, and outside
// a PID namespace (whose end is the end of everything in it), a
// supervisor that did not confirm its cleanup — it did not finish in
// time, or it was killed (by the task itself, under none as the same
// user) — may have left processes nobody can find: at least one is
// counted as left over, and the count marked a guess.
func (sp *superProc) finish() {
	// What is left of the task is counted before the supervisor hears
	// the EOF: it kills them too, and a process it killed first would be
	// gone from the count the cgroup's kill makes. An empty cgroup stays
	// empty (nothing in it can fork into it): no kill, no second count.
	// The common case, nothing left, is one system call: rmdir removes
	// only a cgroup without processes (or child cgroups), so its success
	// is the count.
	left, removed := 0, false
	if sp.cg != nil {
		if removed = sp.cg.removeEmpty(); !removed {
			left = len(sp.cg.procs())
		}
	}
	sp.ctl.Close() // EOF is the kill: no 'K' needed first
	deadline := time.Now().Add(reapWait)
	if sp.cg != nil && !removed {
		if left > 0 {
			sp.killedAtEnd = max(left, sp.cg.kill())
		}
		sp.leftover = sp.cg.wait(deadline)
	}
	timedOut := false
	select {
	case <-sp.shimDone:
	case <-time.After(time.Until(deadline)):
		timedOut = true
		_ = unix.Kill(-sp.pid, unix.SIGKILL)
		_ = unix.Kill(sp.pid, unix.SIGKILL)
		<-sp.shimDone
	}
	if sp.cg != nil {
		if !removed {
			sp.cg.remove()
		}
	} else {
		sp.killedAtEnd = sp.supKilled
		if !sp.pidns && (timedOut || !sp.reaped) {
			sp.leftover, sp.uncounted = 1, true
		}
	}
	if sp.sup != nil && !sp.discarded {
		clean := sp.sawIdle && !timedOut && sp.leftover == 0
		if sp.tmpClean != nil {
			*sp.tmpClean = clean
		}
		sp.pool.put(sp.sup, clean)
	}
}

// cleanup is what finish found: the processes of the task it killed
// after the program ended, those left alive, and whether that count is
// a guess (no cgroup to count them in).
func (sp *superProc) cleanup() (killed, leftover int, uncounted bool) {
	return sp.killedAtEnd, sp.leftover, sp.uncounted
}

// setNamespaces sets the supervisor's clone flags for ip: strict's six
// namespaces, or a mount namespace alone (landlock as root, on a
// supervisor of its own; a pooled one's task makes it for itself, see
// startPooled).
//
// The supervisor maps its uid and gid to themselves itself (shimSpec.MapIDs:
// the task keeps its identity, every other id shows as the overflow id):
// the runner is non-dumpable, so the /proc files of its freshly forked
// child belong to root and an unprivileged runner could not write them.
// Until then, and across its own execve as an unmapped uid, the
// supervisor keeps what the new user namespace gave it as ambient
// capabilities: CAP_SETUID and CAP_SETGID (the maps), CAP_SYS_ADMIN (the
// mount view) and CAP_SETPCAP (the bounding-set drop of the task's process). The
// task's process drops them all before execve.
func setNamespaces(sys *syscall.SysProcAttr, ip *isoPlan) {
	sys.Cloneflags, sys.AmbientCaps = 0, nil
	switch {
	case ip.namespaces:
		sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS
		sys.AmbientCaps = nsCaps()
	case ip.userNS:
		sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		sys.AmbientCaps = nsCaps()
	case ip.mountNS:
		sys.Cloneflags = syscall.CLONE_NEWNS
	}
	netClone(sys, ip)
}

// nsCaps are the capabilities a supervisor started in a new user
// namespace keeps across its execve as ambient ones (see setNamespaces),
// a new slice each time: netClone appends to it.
func nsCaps() []uintptr {
	return []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
}

// recompute refreshes the enforced list after a best-effort downgrade.
func (ip *isoPlan) recompute(pl *plan) {
	_, rl := rlimitsOf(&pl.limits)
	ip.enforced = ip.enforcedList(rl)
}

func maxRSSKB(ru *syscall.Rusage) int64 { return ru.Maxrss } // Linux reports KiB
