//go:build linux

package execx

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

type poolState struct {
	size   int
	mu     sync.Mutex
	idle   []*poolSup
	live   int  // supervisors started (or being started) and not yet reaped
	closed bool // Close was called: nothing returns to idle, nothing new starts
	// forks are the forkers' queues, one a bounding set the supervisors
	// start with (forkerFor); nil while no forker runs. The forkers end
	// when the pool is closed and its last supervisor reaped.
	forks   map[bsetClass]chan forkReq
	forkers sync.WaitGroup
	// tmps are temp dirs kept for the next runs, tmpKept the state of
	// each one lent to a run as it was made (see keptTmp).
	tmps    []keptTmp
	tmpKept sync.Map // path -> tmpState
}

// poolSup is one long-lived supervisor, as its runner sees it.
type poolSup struct {
	pid     int
	sock    int // our end of its socket; closed by discard
	sockOne sync.Once
	done    chan struct{} // closed once it is reaped; ex is then set
	ex      exitInfo
	stopped atomic.Bool // it was seen stopped: never reused
	kind    supKind
}

// supKind is what a pooled supervisor was started for; a task runs only
// on a supervisor of its own kind (taskKind).
type supKind struct {
	// ns: in user and PID namespaces of its own, as their PID 1, for
	// tasks of isoPlan.userNS only (and they only on such a one).
	ns bool
	// dropCaps: for tasks that drop their capabilities but keep (bit c:
	// capability c). Outside namespaces it starts with its bounding set
	// emptied but keep (forkerFor), and a task that keeps its own
	// (isolation none) must not inherit that, nor one keeping more.
	dropCaps bool
	keep     uint64
}

// bsetClass is the bounding set a forker thread gives the supervisors it
// starts: the thread's own (the zero value), or emptied but keep.
type bsetClass struct {
	dropped bool
	keep    uint64
}

// forkerFor is the forker of kind's supervisors. One for tasks that drop
// their capabilities starts them with that drop already made to its
// bounding set, which they inherit (stage.DropBoundingSet), so that no
// task's own process has any left to drop: a drop is a new set of
// credentials, about a microsecond a capability. Supervisors in user
// namespaces of their own start with a full bounding set there whatever
// their forker's (the kernel gives a new user namespace one), so theirs
// is the thread's own.
func forkerFor(kind supKind) bsetClass {
	if !kind.dropCaps || kind.ns {
		return bsetClass{}
	}
	return bsetClass{dropped: true, keep: kind.keep}
}

// taskKind is the kind of supervisor ip's task runs on.
func taskKind(ip *isoPlan) supKind {
	k := supKind{ns: ip.userNS, dropCaps: ip.dropCaps}
	if ip.dropCaps {
		for _, c := range ip.keepCaps {
			k.keep |= 1 << c
		}
	}
	return k
}

// forkReq asks the forker for a supervisor of a kind.
type forkReq struct {
	kind  supKind
	reply chan forkResult
}

type forkResult struct {
	sup *poolSup
	err error
}

// poolable: a supervisor whose process state depends on nothing of the
// task — no clone flags of the task's (strict's namespaces, a network
// namespace of the task's own), hence no mount view made by the
// supervisor, no ID maps of the task's, no lo of its own. Landlock's
// mount view (as root; as an unprivileged user, with a fresh /proc) is
// made by the task's own process between fork and execve, in a mount
// namespace of its own (startPooled), where this process can make one; an
// unprivileged landlock task's user and PID namespaces are its pooled
// supervisor's (supKind.ns), the same for every such task of the pool.
func poolable(ip *isoPlan) bool {
	return !ip.namespaces && !ip.netNS && (!ip.mountNS || mountNSUsable() == nil)
}

// get returns an idle supervisor of the kind asked for, or a new one; ok
// is false when the pool is closed (the caller starts a supervisor of its
// own).
func (p *Pool) get(kind supKind) (sup *poolSup, ok bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, nil
	}
	var dead []*poolSup
	for i := len(p.idle) - 1; i >= 0; i-- {
		s := p.idle[i]
		usable := s.usable()
		if usable && s.kind != kind {
			continue // another kind: stays idle
		}
		p.idle = slices.Delete(p.idle, i, i+1)
		if usable {
			sup = s
			break
		}
		dead = append(dead, s) // killed while idle
	}
	if sup == nil {
		p.live++
	}
	class := forkerFor(kind)
	reqs := p.forks[class] // stays open while our count is in live
	if sup == nil && reqs == nil {
		if p.forks == nil {
			p.forks = map[bsetClass]chan forkReq{}
		}
		reqs = make(chan forkReq)
		p.forks[class] = reqs
		p.forkers.Add(1)
		go p.forker(class, reqs)
	}
	p.mu.Unlock()
	for _, s := range dead {
		s.discard()
	}
	if sup != nil {
		p.reused.Add(1)
		return sup, true, nil
	}
	reply := make(chan forkResult, 1)
	reqs <- forkReq{kind, reply}
	r := <-reply
	if r.err != nil {
		p.release()
		return nil, true, r.err
	}
	p.started.Add(1)
	return r.sup, true, nil
}

// put gives s back after a run: kept if clean, discarded otherwise.
func (p *Pool) put(s *poolSup, clean bool) {
	p.mu.Lock()
	if clean && !p.closed && len(p.idle) < max(p.size, 1) && s.usable() {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		p.kept.Add(1)
		return
	}
	p.mu.Unlock()
	p.discarded.Add(1)
	s.discard()
}

// release counts one supervisor gone, and ends the forker after the last
// one of a closed pool.
func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live--
	if p.closed && p.live == 0 {
		p.closeForks()
	}
}

// Close kills the idle supervisors and waits until every supervisor of
// the pool is gone: a run still in progress finishes first, and its
// supervisor is then discarded. Runs after Close start supervisors of
// their own. Close may be called more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	if p.live == 0 {
		p.closeForks()
	}
	p.mu.Unlock()
	for _, s := range idle {
		s.discard()
	}
	p.closeTmps()
	p.forkers.Wait()
}

// closeForks ends the forkers (p.mu held, nothing live).
func (p *Pool) closeForks() {
	for _, reqs := range p.forks {
		close(reqs)
	}
	p.forks = nil
}

// forker starts every supervisor of the pool with class's bounding set
// from one goroutine locked to its OS thread: a supervisor's parent-death
// signal fires when the thread that forked it exits, so that thread must
// live as long as the pool's supervisors do. A plain forker unlocks when
// the goroutine returns (the pool closed and its last supervisor reaped)
// rather than end the thread: the runtime keeps it, so no other child
// forked from that thread (see startProcess) gets its parent-death
// signal. A forker whose thread dropped capabilities from its bounding
// set never unlocks: the thread ends with it (the process's main thread,
// which the Go runtime never ends, is parked for good instead), and never
// runs another goroutine, which could start a program (a task under
// none) that is to keep them.
func (p *Pool) forker(class bsetClass, reqs <-chan forkReq) {
	defer p.forkers.Done()
	runtime.LockOSThread()
	if class.dropped {
		// Where it cannot (no CAP_SETPCAP: an unprivileged runner), each
		// task's own process drops what it has, as ever.
		_ = stage.DropBoundingSet(class.keep)
	} else {
		defer runtime.UnlockOSThread()
	}
	for req := range reqs {
		s, err := p.fork(req.kind)
		req.reply <- forkResult{s, err}
	}
}

// fork starts one serving supervisor: /dev/null as its 0-2, its end of a
// new SOCK_SEQPACKET socket pair as fd 3, in a process group of its own,
// in /, SIGTERM when this thread dies. With kind.ns, in new user and PID
// namespaces (it maps this process's uid and gid to themselves, and keeps
// the capabilities a task's own process needs there to build its mount
// view, as strict's supervisor does: see setNamespaces). The calling
// thread's bounding set is the supervisor's (forker).
func (p *Pool) fork(kind supKind) (*poolSup, error) {
	sweepFDs()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "supervisor socket: %w", err)
	}
	defer unix.Close(pair[1])
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pair[0])
		return nil, exitcode.Errorf(exitcode.Internal, "%s: %w", os.DevNull, err)
	}
	defer unix.Close(null)
	n := uintptr(null)
	path := shimExe()
	mode := "serve"
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	forkExec := syscall.ForkExec
	if kind.ns {
		mode += ":" + strconv.Itoa(os.Geteuid()) + ":" + strconv.Itoa(os.Getegid())
		sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		sys.AmbientCaps = nsCaps()
		forkExec = forkServeNS
	}
	argv := []string{shim.Arg0, mode}
	procMu.Lock()
	pid, err := forkExec(path, argv, &syscall.ProcAttr{
		Dir: "/", Env: shim.Env,
		Files: []uintptr{n, n, n, uintptr(pair[1])},
		Sys:   sys,
	})
	if err != nil {
		procMu.Unlock()
		unix.Close(pair[0])
		return nil, shim.StartError(path, err)
	}
	live[pid] = true
	procMu.Unlock()
	s := &poolSup{pid: pid, sock: pair[0], done: make(chan struct{}), kind: kind}
	go s.wait(p)
	return s, nil
}

// forkServeNS starts a serving supervisor in its namespaces (a user
// namespace among them: launchSys, not ForkExec, which would copy the
// runner's memory); a test replaces it to see what happens where the
// kernel refuses them.
var forkServeNS = launchSys

// wait reaps s, and continues it whenever it is stopped (a task running
// as the same user can SIGSTOP it): a stopped supervisor would leave its
// run waiting for ever, so it is let go on with its task and marked never
// to be reused.
func (s *poolSup) wait(p *Pool) {
	s.ex = waitPid(s.pid, &s.stopped)
	procMu.Lock()
	delete(live, s.pid)
	procMu.Unlock()
	close(s.done)
	p.release()
}

// usable: not reaped, never stopped.
func (s *poolSup) usable() bool {
	select {
	case <-s.done:
		return false
	default:
		return !s.stopped.Load()
	}
}

// discard kills s and its process group, closes our end of its socket
// and waits until it is reaped; it returns how s ended.
func (s *poolSup) discard() exitInfo {
	select {
	case <-s.done:
	default:
		_ = unix.Kill(-s.pid, unix.SIGKILL)
		_ = unix.Kill(s.pid, unix.SIGKILL)
	}
	s.closeSock()
	<-s.done
	return s.ex
}

func (s *poolSup) closeSock() { s.sockOne.Do(func() { unix.Close(s.sock) }) }

// send hands s one task: msg (shim.ServeRun and the spec) and the
// descriptors in the order of shim.Serve*.
func (s *poolSup) send(msg []byte, fds []int) error {
	for {
		err := unix.Sendmsg(s.sock, msg, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return err
		}
	}
}

// startPooled runs the task on a supervisor of pool: ok is false when the
// pool is closed. A supervisor that was gone before it could take the
// task — the send failed, or it exited 0 without a word, which it does
// only when it stops (EOF, a signal) before a task started: a message
// can still be queued to a process that is exiting — is discarded and a
// fresh one tried, once. One that died otherwise (killed) before
// reporting "started" may have started the program: that run fails, as
// it does on a supervisor of its own.
//
// A task whose spec is longer than a serve message carries
// (shim.MaxServeSpec: a large environment), or with more descriptors
// (shim.MaxServeFDs: many Options.Writable trees), is not pooled: ok is
// false.
func startPooled(pool *Pool, pl *plan, stdin, out, errw *os.File, cg *taskCgroup) (_ proc, ok bool, err error) {
	spec := pl.shimSpec(true)
	spec.Cgroup = cg != nil
	// Landlock as root: the task's own process makes the read-only view
	// in a mount namespace of its own before its restrictions; the
	// supervisor stays as it is.
	spec.StageView, spec.View = spec.View, nil
	msg := append([]byte{shim.ServeRun}, spec.Encode()...)
	if len(msg) > 1+shim.MaxServeSpec || serveFDs(errw != nil, cg != nil, len(pl.rwFiles())) > shim.MaxServeFDs {
		return nil, false, nil
	}
	for try := 0; ; try++ {
		sup, ok, err := pool.get(taskKind(&pl.iso))
		if err != nil && pl.iso.userNS {
			// Refused the namespaces: a supervisor of the task's own
			// tries them, and goes without (startSupervised).
			return nil, false, nil
		}
		if !ok || err != nil {
			return nil, ok, err
		}
		sh, err := servePipes()
		if err != nil {
			pool.put(sup, true)
			return nil, true, err
		}
		// Fd() also puts each of our files in blocking mode, as
		// startProcess does for what it passes on.
		var fdsBuf [shim.ServeErr + 6]int
		fds := append(fdsBuf[:0], int(sh.StatusW.Fd()), int(sh.CtlR.Fd()), int(pl.dir.Fd()), int(stdin.Fd()), int(out.Fd()))
		if errw != nil {
			fds = append(fds, int(errw.Fd()))
		}
		if cg != nil { // after stderr, before the writable trees
			fds = append(fds, cg.fd)
		}
		for _, f := range pl.rwFiles() { // the writable trees come last
			fds = append(fds, int(f.Fd()))
		}
		if err := sup.send(msg, fds); err != nil {
			sh.CloseAll()
			ex := sup.discard()
			if try == 0 {
				continue
			}
			return nil, true, exitcode.Errorf(exitcode.Internal, "supervisor: send the task: %v (wait status %#x)", err, uint32(ex.status))
		}
		sh.CloseChildEnds()
		sp := &superProc{pid: sup.pid, sup: sup, pool: pool, cg: cg, tmpClean: &pl.iso.tmpClean, pidns: sup.kind.ns}
		pr, err := sp.begin(sh, nil)
		if errors.Is(err, errNeverStarted) && try == 0 {
			continue
		}
		if err != nil && sup.kind.ns && userNSRefused(err) {
			return nil, false, nil // as above: nothing of the task ran
		}
		return pr, true, err
	}
}

// servePipes are the pipes of a serve message, status and control: ours
// the status pipe's read end, polled, and the control pipe's write end,
// blocking (one byte at a time, never more than the pipe holds).
func servePipes() (*shim.Pipes, error) {
	sh := &shim.Pipes{}
	var err error
	if sh.StatusR, sh.StatusW, err = childPipe(0, true); err == nil {
		sh.CtlR, sh.CtlW, err = childPipe(1, false)
	}
	if err != nil {
		sh.CloseAll()
		return nil, exitcode.Errorf(exitcode.Internal, "supervisor pipes: %w", err)
	}
	return sh, nil
}

// errNeverStarted: a pooled supervisor ended before it took the task.
var errNeverStarted = exitcode.Errorf(exitcode.Internal, "supervisor: exited before it took the task")

// serveFDs is how many descriptors a serve message carries: the fixed
// ones (shim.ServeErr), stderr, the cgroup and the writable trees.
func serveFDs(stderr, cgroup bool, trees int) int {
	n := shim.ServeErr + trees
	if stderr {
		n++
	}
	if cgroup {
		n++
	}
	return n
}
