//go:build linux

package execx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// selfExe is how the runner re-executes itself as the shim: the running
// binary even if its file was replaced or deleted since.
const selfExe = "/proc/self/exe"

// reapWait bounds how long the runner waits for killed processes to be
// reaped (a process in uninterruptible sleep ignores even SIGKILL for a
// while) before it gives up on them.
const reapWait = 5 * time.Second

var (
	// procMu orders starting a direct child (and registering it in live)
	// against an orphan sweep, so a sweep never mistakes another run's
	// just-started child for an orphan.
	procMu sync.Mutex
	// live holds the pids of direct children execx started and has not
	// reaped yet.
	live = map[int]bool{}

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

func start(pl *plan, stdin, out *os.File) (proc, error) {
	if pl.iso.supervise {
		return startSupervised(pl, stdin, out)
	}
	return startLocal(pl, stdin, out)
}

// dirOf names the opened working directory so that the child's chdir
// (done between fork and exec, before file descriptors are rearranged)
// goes through the descriptor, never through a path that could have been
// swapped for a symlink since it was checked.
func dirOf(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// startProcess starts a child on a goroutine locked to its OS thread for
// the child's whole life: Pdeathsig fires when the thread that forked the
// child exits, so that thread must not go back to the pool where a locked
// goroutine could end it. The same goroutine waits for the child.
func startProcess(path string, argv []string, attr *os.ProcAttr) (pid int, waited <-chan exitInfo, err error) {
	type started struct {
		pid int
		err error
	}
	sc := make(chan started, 1)
	wc := make(chan exitInfo, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		procMu.Lock()
		p, err := os.StartProcess(path, argv, attr)
		if err != nil {
			procMu.Unlock()
			sc <- started{err: err}
			return
		}
		live[p.Pid] = true
		procMu.Unlock()
		sc <- started{pid: p.Pid}
		st, err := p.Wait()
		procMu.Lock()
		delete(live, p.Pid)
		procMu.Unlock()
		var ex exitInfo
		if err == nil {
			ex.status = st.Sys().(syscall.WaitStatus)
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
				ex.rusage = *ru
			}
		} else {
			ex.status = syscall.WaitStatus(0x7f00) // exited 127: cannot happen for our own child
		}
		wc <- ex
	}()
	s := <-sc
	return s.pid, wc, s.err
}

// startError gives a failed exec its exit code: 127 for a program that
// vanished since it was resolved, 126 for one that cannot be executed.
func startError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return exitcode.Errorf(exitcode.ProgramNotFound, "start %s: %w", path, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EPERM), errors.Is(err, unix.EISDIR):
		return exitcode.Errorf(exitcode.Refused, "start %s: %w", path, err)
	}
	return exitcode.Errorf(exitcode.Internal, "start %s: %w", path, err)
}

// localProc is a task whose main process is our direct child: the program
// itself, or the exec shim that became the program. The runner is the
// task's subreaper.
type localProc struct {
	pid        int
	since      uint64 // start time of the direct child, in clock ticks
	waited     <-chan exitInfo
	exitedOnce chan exitInfo
}

func startLocal(pl *plan, stdin, out *os.File) (proc, error) {
	if err := ensureSubreaper(); err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "child subreaper: %w", err)
	}
	attr := &os.ProcAttr{
		Dir:   dirOf(pl.dir),
		Env:   pl.env,
		Files: []*os.File{stdin, out, out},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	path, argv := pl.path, pl.argv
	var sh *shimPipes
	if pl.iso.needsShim() {
		var err error
		if sh, err = newShimPipes(false); err != nil {
			return nil, err
		}
		defer sh.closeAll()
		attr.Files = append(attr.Files, sh.specR, sh.statusW)
		attr.Env = []string{}
		path, argv = selfExe, []string{shimArg0, "exec"}
	}
	pid, waited, err := startProcess(path, argv, attr)
	if err != nil {
		return nil, startError(path, err)
	}
	lp := &localProc{pid: pid, waited: waited}
	if sh != nil {
		sh.closeChildEnds()
		if err := sh.handshake(pl.shimSpec(false)); err != nil {
			<-waited
			return nil, err
		}
	}
	lp.since, _ = procStartTicks(pid)
	return lp, nil
}

func (lp *localProc) exited() <-chan exitInfo { return lp.waited }

func (lp *localProc) signal(sig unix.Signal) {
	_ = unix.Kill(-lp.pid, sig)
	procMu.Lock()
	defer procMu.Unlock()
	for _, pid := range descendants(lp.pid) {
		_ = unix.Kill(pid, sig)
	}
	for _, pid := range lp.orphans() {
		_ = unix.Kill(pid, sig)
		for _, d := range descendants(pid) {
			_ = unix.Kill(d, sig)
		}
	}
}

// orphans are the children of this process that belong to the task: not
// a direct child execx started (those are in live), and started no
// earlier than the task's direct child. Callers hold procMu.
func (lp *localProc) orphans() []int {
	var out []int
	for _, pid := range childrenOf(os.Getpid()) {
		if live[pid] {
			continue
		}
		if t, ok := procStartTicks(pid); ok && t >= lp.since {
			out = append(out, pid)
		}
	}
	return out
}

// finish kills what is left of the task after its main process was
// reaped: the process group, then every orphan the runner inherited (and
// their descendants), reaping each, until none is left.
func (lp *localProc) finish() {
	_ = unix.Kill(-lp.pid, unix.SIGKILL)
	deadline := time.Now().Add(reapWait)
	for round := 0; round < 1000 && time.Now().Before(deadline); round++ {
		procMu.Lock()
		orphans := lp.orphans()
		for _, pid := range orphans {
			for _, d := range descendants(pid) {
				_ = unix.Kill(d, unix.SIGKILL)
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		procMu.Unlock()
		if len(orphans) == 0 {
			return
		}
		for _, pid := range orphans {
			reapPid(pid, deadline)
		}
	}
}

// reapPid waits for our child pid (already sent SIGKILL) until deadline.
// wait4 on one pid never steals another child's status from os/exec.
func reapPid(pid int, deadline time.Time) {
	for {
		wpid, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
		if wpid == pid || (err != nil && err != unix.EINTR) {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// childrenOf lists pid's children from /proc/PID/task/*/children (a child
// belongs to the thread that forked it, and an orphan to whichever thread
// of its new reaper the kernel picked, so every thread is read).
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(field)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// descendants lists every process below pid, breadth first. The snapshot
// can miss a process forked while it is taken; callers loop.
func descendants(pid int) []int {
	var out []int
	queue := childrenOf(pid)
	seen := map[int]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, childrenOf(p)...)
	}
	return out
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

// shimPipes are the descriptors between the runner and a shim: the spec
// goes down fd 3, the shim's reports come back on fd 4, and (supervisor
// only) commands go down fd 5.
type shimPipes struct {
	specR, specW     *os.File
	statusR, statusW *os.File
	ctlR, ctlW       *os.File
}

func newShimPipes(control bool) (*shimPipes, error) {
	sh := &shimPipes{}
	var err error
	if sh.specR, sh.specW, err = os.Pipe(); err == nil {
		if sh.statusR, sh.statusW, err = os.Pipe(); err == nil && control {
			sh.ctlR, sh.ctlW, err = os.Pipe()
		}
	}
	if err != nil {
		sh.closeAll()
		return nil, exitcode.Errorf(exitcode.Internal, "shim pipes: %w", err)
	}
	return sh, nil
}

func (sh *shimPipes) closeChildEnds() {
	for _, f := range []*os.File{sh.specR, sh.statusW, sh.ctlR} {
		if f != nil {
			f.Close()
		}
	}
}

// closeAll closes what is left on our side once the start is decided;
// the supervisor keeps statusR and ctlW for the run by nil-ing them first.
func (sh *shimPipes) closeAll() {
	for _, f := range []*os.File{sh.specR, sh.specW, sh.statusR, sh.statusW, sh.ctlR, sh.ctlW} {
		if f != nil {
			f.Close()
		}
	}
}

// handshake sends the spec and waits for the exec shim's verdict: EOF on
// the close-on-exec status pipe means the program was executed; a report
// means it was not, and why.
func (sh *shimPipes) handshake(spec *shimSpec) error {
	b, _ := json.Marshal(spec)
	_, werr := sh.specW.Write(b)
	sh.specW.Close()
	sh.specW = nil
	msg, rerr := io.ReadAll(sh.statusR)
	if len(bytes.TrimSpace(msg)) > 0 {
		var m shimMsg
		if err := json.Unmarshal(bytes.TrimSpace(msg), &m); err != nil || m.Event != "error" {
			return exitcode.Errorf(exitcode.Internal, "shim: unexpected report %q", msg)
		}
		return &shimError{Code: m.Code, Msg: m.Msg}
	}
	if werr != nil || rerr != nil {
		return exitcode.Errorf(exitcode.Internal, "shim: %w", errors.Join(werr, rerr))
	}
	return nil
}

// shimMsg is one line the shim reports on its status pipe.
type shimMsg struct {
	Event  string `json:"event"` // started, error, exited
	Code   int    `json:"code,omitempty"`
	Msg    string `json:"msg,omitempty"`
	Status uint32 `json:"status,omitempty"`
	UserUS int64  `json:"user_us,omitempty"`
	SysUS  int64  `json:"sys_us,omitempty"`
	MaxRSS int64  `json:"maxrss,omitempty"`
}

// superProc is a task under its own supervisor shim (Options.Supervised,
// and always for strict, where the shim is PID 1 of the new namespace).
type superProc struct {
	pid      int
	ctl      *os.File
	waited   <-chan exitInfo // the shim itself; read only by watch
	shimDone chan struct{}   // closed when the shim has been reaped
	exitC    chan exitInfo   // the task's main process
	exitOne  sync.Once
	msgs     chan shimMsg
}

func startSupervised(pl *plan, stdin, out *os.File) (proc, error) {
	sh, err := newShimPipes(true)
	if err != nil {
		return nil, err
	}
	defer sh.closeAll()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "%s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	attr := &os.ProcAttr{
		Dir:   dirOf(pl.dir),
		Env:   []string{},
		Files: []*os.File{stdin, devnull, devnull, sh.specR, sh.statusW, sh.ctlR, out},
		// SIGTERM, not SIGKILL: a supervisor whose runner died kills the
		// whole task before it exits.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	if pl.iso.namespaces {
		uid, gid := os.Geteuid(), os.Getegid()
		attr.Sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.Sys.GidMappingsEnableSetgroups = false
	}
	argv := []string{shimArg0, "supervise"}
	pid, waited, err := startProcess(selfExe, argv, attr)
	if err != nil && pl.iso.namespaces {
		if !pl.iso.bestEffort {
			return nil, unavailable("strict", fmt.Errorf("cannot create user, PID and network namespaces: %w", err))
		}
		pl.iso.namespaces = false
		pl.iso.recompute(pl)
		attr.Sys.Cloneflags, attr.Sys.UidMappings, attr.Sys.GidMappings = 0, nil, nil
		pid, waited, err = startProcess(selfExe, argv, attr)
	}
	if err != nil {
		return nil, startError(selfExe, err)
	}
	sh.closeChildEnds()
	sp := &superProc{pid: pid, waited: waited, shimDone: make(chan struct{}),
		exitC: make(chan exitInfo, 1), msgs: make(chan shimMsg, 4)}
	b, _ := json.Marshal(pl.shimSpec(true))
	_, werr := sh.specW.Write(b)
	sh.specW.Close()
	sh.specW = nil
	statusR := sh.statusR
	sh.statusR = nil
	go func() { // the shim's reports, until it exits
		defer close(sp.msgs)
		defer statusR.Close()
		sc := bufio.NewScanner(statusR)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			var m shimMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				sp.msgs <- m
			}
		}
	}()
	first, ok := <-sp.msgs
	if !ok || first.Event != "started" {
		ctl := sh.ctlW
		ctl.Close()
		sh.ctlW = nil
		ex := <-waited
		for range sp.msgs {
		}
		switch {
		case ok && first.Event == "error":
			return nil, &shimError{Code: first.Code, Msg: first.Msg}
		case werr != nil:
			return nil, exitcode.Errorf(exitcode.Internal, "supervisor: %w", werr)
		}
		return nil, exitcode.Errorf(exitcode.Internal, "supervisor exited before starting the task (wait status %#x)", uint32(ex.status))
	}
	sp.ctl = sh.ctlW
	sh.ctlW = nil
	go sp.watch()
	return sp, nil
}

// watch turns the supervisor's "exited" report — or, if it dies without
// one, its own end — into the task's exit, and reaps the supervisor.
func (sp *superProc) watch() {
	defer func() {
		ex := <-sp.waited // msgs closed: the shim closed its status pipe by exiting
		close(sp.shimDone)
		sp.exit(ex) // no-op if the task's exit was reported
	}()
	for m := range sp.msgs {
		if m.Event == "exited" {
			sp.exit(exitInfo{
				status: syscall.WaitStatus(m.Status),
				rusage: syscall.Rusage{
					Utime:  syscall.NsecToTimeval(m.UserUS * 1000),
					Stime:  syscall.NsecToTimeval(m.SysUS * 1000),
					Maxrss: m.MaxRSS,
				},
			})
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
	if _, err := sp.ctl.Write(cmd); err != nil {
		_ = unix.Kill(-sp.pid, sig) // the supervisor is gone or stuck: its group at least
	}
}

// finish tells the supervisor to kill and reap everything left and waits
// for it to exit; a supervisor that does not is killed with its group.
func (sp *superProc) finish() {
	_, _ = sp.ctl.Write([]byte{'K'})
	sp.ctl.Close()
	select {
	case <-sp.shimDone:
	case <-time.After(reapWait):
		_ = unix.Kill(-sp.pid, unix.SIGKILL)
		_ = unix.Kill(sp.pid, unix.SIGKILL)
		<-sp.shimDone
	}
}

// recompute refreshes the enforced list after a best-effort downgrade.
func (ip *isoPlan) recompute(pl *plan) {
	_, rl := rlimitsOf(&pl.limits)
	ip.enforced = ip.enforcedList(rl)
}

func maxRSSKB(ru *syscall.Rusage) int64 { return ru.Maxrss } // Linux reports KiB
