package execx

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
)

// isoPlan is what will be enforced on one run, decided before start.
// enforced lists exactly what is applied; a feature that turns out to be
// unavailable at start either fails the run (125) or, in best effort, is
// dropped from enforced (and named in dropped) before the Result is
// written.
//
// Where each layer lives (the task is hostile): everything that restricts
// the task is applied by the exec stage (package stage), in the task's own
// process between fork and execve; the namespaces are created with the
// task's supervisor, which is the task's PID 1 under strict and sets up
// its mount view. No thread of the runner or of the supervisor is ever in
// the task's Landlock domain, seccomp filter or credential set.
type isoPlan struct {
	backend    Isolation
	bestEffort bool
	supervise  bool // a shim stays alive as the task's supervisor
	cgroup     bool // the task gets a cgroup v2 of its own (taskCgroup)
	landlock   int  // Landlock ABI to enforce; 0 = none
	namespaces bool // new user, PID, network, IPC, UTS and mount namespaces
	mountNS    bool // a mount namespace alone (landlock as root)
	// userNS: user, PID and mount namespaces of the task's own (landlock
	// as an unprivileged user, where the kernel lets one make them; see
	// userNSUsable): the supervisor is the task's PID 1, so the task's
	// end is the kernel's kill of everything in it, not a chase, and the
	// read-only view root gets closes the metadata changes Landlock has
	// no right for.
	userNS   bool
	view     stage.View
	nnp      bool // no_new_privs
	dropCaps bool
	keepCaps []int
	nodes    []string
	seccomp  string   // stage.Seccomp* profile; "" = none
	denyUnix bool     // seccomp refuses unix sockets (strict without Landlock's RESOLVE_UNIX)
	filters  [][]byte // seccomp and denyUnix compiled (stage.Spec.Filters)
	//lint:ignore U1000 set and read on darwin
	seatbelt bool
	rlimits  []stage.Rlimit
	// The network (NetworkMode): netNS a namespace of the task's own
	// (strict's, or one made for it), netUser made through a user
	// namespace (an unprivileged landlock or none run), loopback lo up in
	// it, proxy the runner's proxy reachable on 127.0.0.1:ProxyPort,
	// netOpen Landlock's TCP rule lifted (the namespace, or host, decides).
	network  NetworkMode
	netNS    bool
	netUser  bool
	loopback bool
	proxy    bool
	netOpen  bool
	tmpdir   string   // private writable temp dir the runner made (landlock, strict, seatbelt)
	taskTmp  string   // else the task's TMPDIR, a tmpfs its mount view makes (stage.View.Tmp)
	tmp      *os.File // tmpdir, opened once when it was made (see makeTmpdir)
	tmpPool  *Pool    // tmpdir came from this pool and goes back to it (see keptTmp)
	tmpClean bool     // the run's pooled supervisor went back clean: tmpdir may be kept
	enforced []string
	dropped  []string
}

// rlimitsOf turns the non-zero rlimit fields of l into specs. RLIMIT_NPROC
// counts every process of the real user, not of the task, and the kernel
// does not apply it to root at all: it is listed as enforced only when the
// runner is not root.
func rlimitsOf(l *Limits) (specs []stage.Rlimit, enforced []string) {
	add := func(name string, res int, v int64) {
		if v <= 0 {
			return
		}
		specs = append(specs, stage.Rlimit{Name: name, Resource: res, Value: uint64(v)})
		if res == unix.RLIMIT_NPROC && os.Geteuid() == 0 {
			return
		}
		enforced = append(enforced, "rlimit."+name)
	}
	add("cpu", unix.RLIMIT_CPU, l.CPUSeconds)
	add("nproc", unix.RLIMIT_NPROC, l.Processes)
	add("fsize", unix.RLIMIT_FSIZE, l.FileBytes)
	add("nofile", unix.RLIMIT_NOFILE, l.OpenFiles)
	add("as", unix.RLIMIT_AS, l.MemoryBytes) // the stage applies it last
	return specs, enforced
}

// unavailable is the refusal for an isolation feature this machine cannot
// enforce when best effort was not allowed. Its way out is the policy's
// field "IsolationBestEffort", which the CLI words as its flag.
func unavailable(what string, why error) error {
	return exitcode.Fieldf(exitcode.Internal, "Isolation", what, "isolation %s: %v: %w (use %s to run with what is available)",
		what, why, ErrIsolationUnavailable, exitcode.Ref("IsolationBestEffort"))
}

// taskTmpdir is the task's TMPDIR: the view's tmpfs or the runner's dir
// ("" when it has none of its own).
func (ip *isoPlan) taskTmpdir() string {
	if ip.taskTmp != "" {
		return ip.taskTmp
	}
	return ip.tmpdir
}

// closeTmpdir removes the task's temp dir after the run, or gives it
// back to the pool it came from.
func (ip *isoPlan) closeTmpdir() {
	switch {
	case ip.tmpdir == "":
	case ip.tmpPool != nil:
		ip.tmpPool.putTmpdir(ip.tmpdir, ip.tmp, ip.tmpClean)
		ip.tmp = nil
	default:
		_ = os.RemoveAll(ip.tmpdir)
	}
}

// makeTmpdir makes the task's private temp dir and opens it at once,
// refusing a symlink: every later use (Landlock's rule, the mount view's
// bind) goes through the descriptor, not the path, which sits in a
// directory (/tmp) other processes of the same user can write.
func makeTmpdir() (string, *os.File, error) {
	made, err := os.MkdirTemp("", "artexec-")
	if err != nil {
		return "", nil, exitcode.Errorf(exitcode.Internal, "private temp dir in %s (the runner's TMPDIR, else /tmp): %w", os.TempDir(), err)
	}
	// The canonical path: /tmp may be a link, and a relative TMPDIR is
	// the runner's, not the task's (which starts elsewhere).
	d, err := filepath.Abs(made)
	if err == nil {
		d, err = filepath.EvalSymlinks(d)
	}
	if err == nil {
		var f *os.File
		if f, err = fsx.OpenDir(d); err == nil {
			return d, f, nil
		}
	}
	_ = os.Remove(made)
	return "", nil, exitcode.Errorf(exitcode.Internal, "private temp dir: %w", err)
}
