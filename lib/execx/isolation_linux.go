//go:build linux

package execx

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/execx/stage/filters"
	"github.com/art-runtime/art/lib/exitcode"
)

// landlockABI is the kernel's Landlock ABI version (0: none).
func landlockABI() int { return stage.LandlockABI() }

// landlockFeatures names what ABI v enforces, as listed in
// Result.isolation.enforced and by `artexec isolation`.
func landlockFeatures(v int) []string {
	var out []string
	if v >= 1 {
		out = append(out, "landlock.fs")
	}
	if v >= 4 {
		out = append(out, "landlock.net.tcp")
	}
	if v >= 6 {
		out = append(out, "landlock.scope.signal", "landlock.scope.abstract_unix_socket")
	}
	if v >= stage.ResolveUnixABI {
		out = append(out, "landlock.fs.resolve_unix")
	}
	if v >= 10 {
		out = append(out, "landlock.net.udp")
	}
	return out
}

// Layer names, in the order they are applied, as listed in
// Result.isolation.enforced and by `artexec isolation`.
const (
	layerSupervisor   = "supervisor"          // per-task supervisor: nothing of the task outlives the runner
	layerNonDumpable  = "runner.non_dumpable" // runner and supervisor cannot be ptraced or read through /proc
	layerSession      = "session.new"         // setsid: no controlling terminal
	layerMountProc    = "mount.proc"          // a fresh /proc of the task's PID namespace
	layerReadOnly     = "mount.readonly"      // everything read-only but the workspace and temp dir
	layerMountTmp     = "mount.tmpdir"        // the private TMPDIR is the view's fresh /dev/shm, gone with it
	layerNNP          = "no_new_privs"
	layerCaps         = "capabilities.drop" // bounding, ambient, inheritable, permitted, effective
	layerSeccompPtr   = "seccomp.ptrace"    // ptrace, process_vm_*, pidfd_getfd
	layerSeccompTTY   = "seccomp.tty_inject"
	layerSeccompKern  = "seccomp.kernel" // mount, kexec, modules, namespaces, bpf, keyrings, io_uring
	layerSeccompSock  = "seccomp.socket" // only unix and TCP sockets
	layerSeccompUnix  = "seccomp.socket.unix"
	layerSeccompSelf  = "seccomp.sched" // scheduling, I/O priority, affinity, nice, rlimits: the caller's own only
	layerSeccompSetID = "seccomp.setid" // no set-user-ID or set-group-ID bit on any file
	layerCgroup       = "cgroup"        // a cgroup v2 of its own, killed whole with cgroup.kill
)

// Network layers (NetworkMode), after the namespaces.
const (
	layerLoopback = "network.loopback" // a network namespace of the task's own with only lo up
	layerProxy    = "network.proxy"    // egress only through the runner's allowlist proxy
)

// planIsolation plans p's isolation for a task of limits l; trees are the
// writable trees (the workspace and Options.Writable), canonical.
func planIsolation(p *Policy, l *Limits, opt *Options, trees []string) (ip isoPlan, err error) {
	// Every task on Linux runs under its own supervisor, whatever the
	// mode: it is what kills every process of the task when the runner is
	// killed, and neither a subreaper runner (gone with it) nor Pdeathsig
	// (the direct child only) can.
	ip = isoPlan{backend: p.Isolation, bestEffort: p.IsolationBestEffort, supervise: true, cgroup: cgroupUsable()}
	var rlEnforced []string
	ip.rlimits, rlEnforced = rlimitsOf(l)
	drop := func(layer string, why error) error {
		if !ip.bestEffort {
			return unavailable(string(p.Isolation), why)
		}
		ip.dropped = append(ip.dropped, layer+": "+why.Error())
		return nil
	}
	switch p.Isolation {
	case IsolationNone:
	case IsolationSeatbelt:
		if err := drop("seatbelt", errors.New("sandbox-exec exists only on macOS")); err != nil {
			return ip, err
		}
	case IsolationLandlock, IsolationStrict:
		ip.nnp, ip.dropCaps, ip.nodes = true, true, p.WorkspaceNodes
		for _, name := range p.KeepCapabilities {
			c, _ := stage.CapNumber(name) // validated
			ip.keepCaps = append(ip.keepCaps, c)
		}
		if abi := landlockABI(); abi > 0 {
			ip.landlock = abi
		} else if err := drop("landlock", errors.New("the kernel has no Landlock")); err != nil {
			return ip, err
		}
		if stage.SeccompSupported() {
			ip.seccomp = stage.SeccompLandlock
		} else if err := drop("seccomp", errors.New("the kernel has no seccomp filters")); err != nil {
			return ip, err
		}
		if p.Isolation == IsolationStrict {
			ip.namespaces = true
			ip.view = stage.View{Proc: true, ReadOnly: true}
			if ip.seccomp != "" {
				ip.seccomp = stage.SeccompStrict
				ip.denyUnix = ip.landlock < stage.ResolveUnixABI
			}
		} else if os.Geteuid() == 0 && stage.HasCap(unix.CAP_SYS_ADMIN) {
			// Landlock has no right for chmod, chown, xattrs or
			// timestamps, and root owns most of the system: as root (the
			// only case a mount namespace needs no user namespace; root
			// in a container without CAP_SYS_ADMIN goes without) the task
			// also gets a read-only view.
			ip.mountNS = true
			ip.view = stage.View{ReadOnly: true}
		} else if userNSUsable() {
			// As an unprivileged user only a user namespace of the task's
			// own lets the supervisor make the others: a PID namespace
			// (cleanup by the kernel; without a cgroup it would be the
			// supervisor's chase of the task's processes) and root's
			// read-only view with a fresh /proc of it.
			ip.userNS = true
			ip.view = stage.View{Proc: true, ReadOnly: true}
		}
		if ip.seccomp != "" {
			if ip.filters, err = filters.Programs(ip.seccomp, ip.denyUnix); err != nil {
				return ip, exitcode.Errorf(exitcode.Internal, "isolation: seccomp: %w", err)
			}
		}
		if ip.view.ReadOnly && privateTmpFits(trees) {
			// The task's private temp dir is the fresh /dev/shm its view
			// makes anyway (stage.View.Tmp): nothing to make on the host
			// (a mkdir on ext4 and its removal cost a one-shot run more
			// than its Landlock ruleset), nothing left on it if the
			// runner is killed. It holds at most the task's memory limit.
			ip.view.Tmp, ip.taskTmp = true, stage.ShmDir()
			if l.MemoryBytes > 0 {
				ip.view.TmpSize = uint64(l.MemoryBytes)
			}
		} else if err = ip.runnerTmpdir(opt.Pool); err != nil {
			return ip, err
		}
	}
	ip.planNetwork(p)
	ip.enforced = ip.enforcedList(rlEnforced)
	return ip, nil
}

// enforcedList is computed from the plan, so dropping a feature at start
// (best effort) and recomputing keeps the report exact.
func (ip *isoPlan) enforcedList(rl []string) []string {
	out := []string{layerSupervisor, layerNonDumpable, layerSession}
	if ip.cgroup {
		out = append(out, layerCgroup)
	}
	switch {
	case ip.namespaces:
		out = append(out, "namespace.user", "namespace.pid")
		if ip.netNS {
			out = append(out, "namespace.net")
		}
		out = append(out, "namespace.ipc", "namespace.uts", "namespace.mount")
	case ip.userNS:
		out = append(out, "namespace.user", "namespace.pid")
		if ip.netNS {
			out = append(out, "namespace.net")
		}
		out = append(out, "namespace.mount")
	default:
		if ip.netUser {
			out = append(out, "namespace.user")
		}
		if ip.netNS {
			out = append(out, "namespace.net")
		}
		if ip.mountNS {
			out = append(out, "namespace.mount")
		}
	}
	if ip.view.Proc {
		out = append(out, layerMountProc)
	}
	if ip.view.ReadOnly {
		out = append(out, layerReadOnly)
	}
	if ip.view.Tmp {
		out = append(out, layerMountTmp)
	}
	if ip.loopback {
		out = append(out, layerLoopback)
	}
	if ip.proxy {
		out = append(out, layerProxy)
	}
	if ip.nnp {
		out = append(out, layerNNP)
	}
	if ip.dropCaps {
		out = append(out, layerCaps)
	}
	for _, f := range landlockFeatures(ip.landlock) {
		if !(ip.netOpen && f == "landlock.net.tcp") {
			out = append(out, f)
		}
	}
	if ip.seccomp != "" {
		out = append(out, layerSeccompPtr, layerSeccompTTY, layerSeccompKern, layerSeccompSock)
		if ip.denyUnix {
			out = append(out, layerSeccompUnix)
		}
		out = append(out, layerSeccompSelf, layerSeccompSetID)
	}
	return append(out, rl...)
}

// landlockRW is what a landlocked task may write: the workspace, its
// private temp dir and the caller's Options.Writable. The paths are for
// messages and the mount view's targets; the rules and binds are made
// from rwFiles, the same trees opened once.
func (pl *plan) landlockRW() []string {
	rw := []string{pl.workspace}
	if pl.iso.tmpdir != "" {
		rw = append(rw, pl.iso.tmpdir)
	}
	return append(rw, pl.writable...)
}

// rwFiles are landlockRW's trees as the runner opened them, in the same
// order, when Landlock or a mount view needs them: what the supervisor
// receives (shim.Spec.RWTrees).
func (pl *plan) rwFiles() []*os.File {
	if pl.iso.landlock == 0 && !pl.iso.namespaces && !pl.iso.mountNS && !pl.iso.userNS {
		return nil
	}
	rw := []*os.File{pl.ws}
	if pl.iso.tmp != nil {
		rw = append(rw, pl.iso.tmp)
	}
	return append(rw, pl.writableFiles...)
}

func (pl *plan) shimSpec(supervise bool) *shim.Spec {
	ip := &pl.iso
	s := &shim.Spec{
		Stage: stage.Spec{
			Path:     pl.path,
			Argv:     pl.argv,
			Env:      pl.env,
			Rlimits:  ip.rlimits,
			NNP:      ip.nnp,
			DropCaps: ip.dropCaps,
			KeepCaps: ip.keepCaps,
			Landlock: ip.landlock,
			Nodes:    ip.nodes,
			Filters:  ip.filters,
			NetOpen:  ip.netOpen && ip.landlock > 0,
		},
		PIDNS:     ip.namespaces || ip.userNS,
		Supervise: supervise,
		Stderr:    pl.stderr,
	}
	if s.Stage.Landlock > 0 {
		s.Stage.RW = pl.landlockRW()
		if ip.view.Tmp {
			s.Stage.PrivateTmp = stage.ShmDir()
		}
	}
	if ip.namespaces || ip.netUser || ip.userNS {
		s.MapIDs, s.UID, s.GID = true, os.Geteuid(), os.Getegid()
	}
	s.Loopback = ip.loopback
	if ip.proxy {
		s.ProxyPort = ProxyPort
	}
	if ip.namespaces || ip.mountNS || ip.userNS {
		v := ip.view
		v.RW, v.Cwd = pl.landlockRW(), pl.dirPath
		s.View = &v
	}
	s.RWTrees = len(pl.rwFiles())
	st := &s.Stage
	s.Direct = ip.direct()
	if ip.needsNofile() {
		st.NofileSoft = startNofile() // as ForkExec gives it back under none
	}
	return s
}

// direct: the supervisor starts the program itself, with nothing to
// apply between fork and execve (shim.Spec.Direct).
func (ip *isoPlan) direct() bool {
	return len(ip.rlimits) == 0 && !ip.nnp && !ip.dropCaps && ip.landlock == 0 && len(ip.filters) == 0
}

// needsNofile: the task's own process restricts itself and no policy
// limit sets its open files, so it must be given back the soft limit
// this process started with (startNofile).
func (ip *isoPlan) needsNofile() bool {
	return !ip.direct() && !slices.ContainsFunc(ip.rlimits, func(r stage.Rlimit) bool { return r.Resource == unix.RLIMIT_NOFILE })
}

// privateTmpFits says whether the task's private temp dir can be the
// fresh /dev/shm of its view (stage.View.Tmp): the host has /dev/shm, and
// no writable tree (trees) is /dev/shm or holds it — the view then makes
// no fresh one, and the run gets a temp dir of the runner's making.
func privateTmpFits(trees []string) bool {
	if runnerTmpOnly {
		return false
	}
	shm := stage.ShmDir()
	if st, err := os.Stat(shm); err != nil || !st.IsDir() || shm == "/" {
		return false
	}
	return !slices.ContainsFunc(trees, func(t string) bool { return withinDir(shm, t) })
}

// runnerTmpOnly, set by tests, gives every run a temp dir of the
// runner's making, as runs without a view get: the tests of those dirs
// (their making, keeping and removal) run as root, where every landlock
// run has a view.
var runnerTmpOnly bool

// withinDir: dir is root or a path beneath it (both canonical).
func withinDir(dir, root string) bool {
	return dir == root || root == "/" || strings.HasPrefix(dir, root+"/")
}

// runnerTmpdir gives the run a private temp dir of the runner's making:
// a kept one of pool, if not nil, or a new one (makeTmpdir).
func (ip *isoPlan) runnerTmpdir(pool *Pool) (err error) {
	if pool != nil {
		ip.tmpdir, ip.tmp, err = pool.tmpdir()
		ip.tmpPool = pool
	} else {
		ip.tmpdir, ip.tmp, err = makeTmpdir()
	}
	return err
}

// userNSUsable says whether a landlock run as an unprivileged user should
// try user, PID and mount namespaces of its own (isoPlan.userNS): not
// where the kernel's settings forbid or defang them — no user namespaces
// (user.max_user_namespaces 0, Debian's kernel.unprivileged_userns_clone
// 0), or AppArmor's restriction, under which one is made but holds no
// capability to mount in — and not after such a start failed in this
// process (userNSFailed). Reading three settings once per process costs
// less than the failed start it saves; a start that fails anyway falls
// back to a run without them (startSupervised).
func userNSUsable() bool { return !userNSFailed.Load() && userNSAllowed() }

var userNSAllowed = sync.OnceValue(func() bool {
	setting := func(name string) string {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return setting("user/max_user_namespaces") != "0" &&
		setting("kernel/unprivileged_userns_clone") != "0" &&
		setting("kernel/apparmor_restrict_unprivileged_userns") != "1"
})

// userNSFailed: a run of this process could not start in the namespaces
// of isoPlan.userNS; later runs go without.
var userNSFailed atomic.Bool

// mountNSUsable says, once per process, whether this process can start a
// child in a mount namespace of its own. A pooled supervisor has landlock's
// view as root built by the task's own process in one (shim.Spec.StageView); where
// the kernel or a container refuses it, the task gets a supervisor of its
// own instead, whose start in a mount namespace falls back as best effort
// allows. Asked only by a runner with a pool (one probe child for its
// life), never by a one-shot run.
var mountNSUsable = sync.OnceValue(func() error { return probeClone(syscall.CLONE_NEWNS) })
