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
	ip, err := planIsolation(&Policy{Isolation: b, IsolationBestEffort: true}, &Limits{}, &Options{})
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
// itself must get too (stage.Spec.NofileSoft). The Go runtime raised this
// process's soft limit to one below the hard limit at start and keeps the
// old value to itself, so, if it was raised, the old value is read once
// from a child of this process's shim stopped by ptrace at its execve,
// before the child's own Go runtime could raise it; the child is then
// killed. 0: not raised (every process of the chain has the same limit),
// or it could not be read (ptrace refused): the task keeps its
// supervisor's limit.
var startNofile = sync.OnceValue(probeNofile)

func probeNofile() uint64 {
	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &cur) != nil || cur.Max == 0 || cur.Cur != cur.Max-1 {
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
