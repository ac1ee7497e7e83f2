//go:build linux

package execx

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/internal/startnofile"
	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
)

var (
	probeOnce sync.Once
	probed    Capabilities
)

// Probe reports what this kernel can enforce. Namespaces are probed by
// really cloning the shim into them (so the binary must call IsShim first
// thing in main); the answer is cached for the life of the process.
func Probe() Capabilities {
	probeOnce.Do(func() {
		c := newCapabilities()
		c.Landlock.ABI = landlockABI()
		c.Landlock.Enforces = append(c.Landlock.Enforces, landlockFeatures(c.Landlock.ABI)...)
		var errs []string
		try := func(flags uintptr) bool {
			if err := probeClone(flags); err != nil {
				errs = append(errs, err.Error())
				return false
			}
			return true
		}
		c.Namespaces.User = try(syscall.CLONE_NEWUSER)
		if c.Namespaces.User {
			c.Namespaces.PID = try(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID)
			c.Namespaces.Net = try(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET)
			c.Namespaces.IPC = try(syscall.CLONE_NEWUSER | syscall.CLONE_NEWIPC)
			c.Namespaces.UTS = try(syscall.CLONE_NEWUSER | syscall.CLONE_NEWUTS)
			c.Namespaces.Mount = try(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS)
		}
		if len(errs) > 0 {
			c.Namespaces.Error = errs[0]
		}
		var flag int32 // the kernel writes whether we are one; success is what matters
		c.Subreaper = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&flag)), 0, 0, 0) == nil
		c.Seccomp = stage.SeccompSupported()
		ns := c.Namespaces.User && c.Namespaces.PID && c.Namespaces.Net && c.Namespaces.IPC && c.Namespaces.UTS && c.Namespaces.Mount
		if !(c.Namespaces.User && c.Namespaces.PID && c.Namespaces.Mount) {
			// Landlock as a user would go without them (isoPlan.userNS):
			// the backend's list below says so, and later runs of this
			// process do not try.
			userNSFailed.Store(true)
		}
		ll := c.Landlock.ABI > 0
		c.Backends = []BackendCaps{
			backendCaps(IsolationNone, true),
			backendCaps(IsolationLandlock, ll && c.Seccomp),
			backendCaps(IsolationStrict, ll && c.Seccomp && ns),
			{Backend: IsolationSeatbelt, Available: false, Enforces: []string{}},
		}
		netns := c.Namespaces.Net || (os.Geteuid() == 0 && stage.HasCap(unix.CAP_NET_ADMIN))
		for _, m := range NetworkModes {
			nc := NetworkCaps{Mode: m, Available: true, Enforces: []string{}}
			switch m {
			case NetworkLoopback:
				nc.Available, nc.Enforces = netns, []string{"namespace.net", layerLoopback}
			case NetworkAllow:
				nc.Available, nc.Enforces = netns, []string{"namespace.net", layerLoopback, layerProxy}
			case NetworkNone: // under landlock and strict
				nc.Available, nc.Enforces = c.Landlock.ABI >= 4 || netns, []string{"landlock.net.tcp"}
				if c.Landlock.ABI < 4 {
					nc.Enforces = []string{"namespace.net"}
				}
			}
			c.Networks = append(c.Networks, nc)
		}
		probed = c
	})
	return probed
}

// backendCaps is what a run of backend b enforces here, from the same plan
// a run makes (layers the kernel lacks are left out, as best effort would).
func backendCaps(b Isolation, available bool) BackendCaps {
	ip, err := planIsolation(&Policy{Isolation: b, IsolationBestEffort: true}, &Limits{}, &Options{}, nil)
	if ip.tmpdir != "" {
		_ = os.Remove(ip.tmpdir)
		ip.tmp.Close()
	}
	if err != nil {
		return BackendCaps{Backend: b, Enforces: []string{}}
	}
	return BackendCaps{Backend: b, Available: available, Enforces: ip.enforced}
}

// probeClone starts the shim in probe mode inside new namespaces.
func probeClone(flags uintptr) error {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	sweepFDs()
	p, err := os.StartProcess(shimExe(), []string{shim.Arg0, "probe"}, &os.ProcAttr{
		Env:   shim.Env,
		Files: []*os.File{devnull, devnull, devnull},
		Sys: &syscall.SysProcAttr{
			Cloneflags: flags, // no id maps: the clone itself is the probe
		},
	})
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

// startNofile is the soft RLIMIT_NOFILE this process was started with,
// which a program started with syscall.ForkExec gets back (package
// syscall restores it in the child) — a task under none, through its
// supervisor's ForkExec — and which a task whose own process restricts
// itself must get too (stage.Spec.NofileSoft). Package syscall raised
// this process's soft limit to one below the hard limit at its
// initialisation and keeps the old value to itself; package startnofile
// read it before that. Where it could not (an architecture without its
// assembly), the old value is read once from a child stopped by ptrace
// at its execve, before the child's own Go runtime could raise it: a
// one-shot run's own supervisor, started so (stopAtExec), or else a child
// of this process's shim started for it and killed (probeNofile). 0: not
// raised (every process of the chain has the same limit), or it could not
// be read (ptrace refused): the task keeps its supervisor's limit.
func startNofile() uint64 {
	nofile.mu.Lock()
	defer nofile.mu.Unlock()
	if !nofileKnown() {
		nofile.soft, nofile.known = probeNofile(), true
	}
	return nofile.soft
}

// nofileKnown says whether the limit is known, learning it from package
// startnofile first if nothing did yet. Callers hold nofile.mu.
func nofileKnown() bool {
	if !nofile.known {
		nofile.soft, nofile.known = nofileAtStart()
	}
	return nofile.known
}

var nofile struct {
	mu    sync.Mutex
	known bool
	soft  uint64
}

func learnNofile(soft uint64) {
	nofile.mu.Lock()
	defer nofile.mu.Unlock()
	if !nofile.known {
		nofile.soft, nofile.known = soft, true
	}
}

// nofileRaised is this process's open-files limit, if the Go runtime
// raised its soft limit at start (one below the hard one).
func nofileRaised() (cur unix.Rlimit, ok bool) {
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &cur) != nil || cur.Max == 0 || cur.Cur != cur.Max-1 {
		return cur, false
	}
	return cur, true
}

// nofileAtStart is startNofile from package startnofile's reading: the
// soft limit this process started with if syscall raised it since, 0 if
// it did not; known is false where startnofile could not read it.
func nofileAtStart() (soft uint64, known bool) {
	s, h, ok := startnofile.Limit()
	if !ok {
		return 0, false
	}
	if cur, raised := nofileRaised(); !raised || s >= h-1 || cur.Max != h {
		return 0, true // not raised by syscall (or changed by someone since)
	}
	return s, true
}

// nofileUnknown says whether startNofile would start a probe child: the
// limit was raised and no child has shown the old one yet. The one-shot
// supervisor is then started stopped at its execve instead (stopAtExec),
// which costs a ptrace stop, not a process.
func nofileUnknown() bool {
	if _, ok := nofileRaised(); !ok {
		return false
	}
	nofile.mu.Lock()
	defer nofile.mu.Unlock()
	return !nofileKnown()
}

func probeNofile() uint64 {
	cur, ok := nofileRaised()
	if !ok {
		return 0
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0
	}
	defer devnull.Close()
	fd := devnull.Fd()
	runtime.LockOSThread() // the tracer is this thread
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec(shimExe(), []string{shim.Arg0, "probe"}, &syscall.ProcAttr{
		Env:   shim.Env,
		Files: []uintptr{fd, fd, fd},
		Sys:   &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0
	}
	var lim unix.Rlimit
	err = unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &lim)
	_ = unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, werr := unix.Wait4(pid, &ws, 0, nil); !errors.Is(werr, unix.EINTR) {
			break
		}
	}
	if err != nil || lim.Cur >= cur.Cur {
		return 0
	}
	return lim.Cur
}

// stopAtExec takes over our child pid, started with SysProcAttr.Ptrace
// by this thread (its tracer) and now stopped at its execve: it learns
// the soft open-files limit the child has there (startNofile's value)
// and lets the child go on untraced. If the child ended instead, its
// exit is returned (ended).
func stopAtExec(pid int) (ex exitInfo, ended bool) {
	for {
		_, err := syscall.Wait4(pid, &ex.status, unix.WALL, &ex.rusage)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			ex.status = syscall.WaitStatus(0x7f00) // as waitPid: cannot happen for our own child
			return ex, true
		case !ex.status.Stopped():
			return ex, true
		case ex.status.StopSignal() != syscall.SIGTRAP: // a signal before the exec: deliver it
			_ = syscall.PtraceCont(pid, int(ex.status.StopSignal()))
			continue
		}
		cur, _ := nofileRaised()
		var lim unix.Rlimit
		soft := uint64(0)
		if unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &lim) == nil && lim.Cur < cur.Cur {
			soft = lim.Cur
		}
		learnNofile(soft)
		_ = syscall.PtraceDetach(pid) // the exec's SIGTRAP is dropped
		return exitInfo{}, false
	}
}
