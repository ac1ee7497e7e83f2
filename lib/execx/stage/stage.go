// Package stage is the exec stage of a task: the last code that runs in
// the task's own process, after fork and immediately before execve, and
// the only place where a task's restrictions are applied — new session,
// rlimits, no_new_privs, Landlock, capability drop, seccomp. Nothing of
// the runner or of the per-task supervisor is ever restricted.
//
// On Linux the stage is no process of its own: the supervisor prepares
// everything in Go (NewChild: argument and environment arrays, the
// limits, the Landlock ruleset, the capability sets, the compiled
// seccomp programs) and forks the task from its locked thread (Child):
// on amd64 a vfork-style clone (CLONE_VM|CLONE_VFORK: the child borrows
// the supervisor's memory while that thread waits for its execve, the
// return address kept in a register across the clone as Go's own fork
// keeps it), elsewhere a clone that copies the memory. The child runs only
// nosplit code making raw system calls, writes nothing of the
// supervisor's but its own stack frames, restricts itself and execs the
// program — for a pooled supervisor's task that needs a mount view, after
// building it in a mount namespace of its own (Child.InView). So the
// task's Landlock domain, seccomp filter, credentials and mount view are
// the task's alone, and a task starts without a second Go runtime.
// On macOS (no supervisor) Exec applies the rlimits in a re-executed
// shim and execs the program.
//
// It is kept small on purpose (golang.org/x/sys and the standard library;
// no art package, and not even the seccomp compiler: the filters arrive
// compiled, see package filters) so that the minimal shim binary that
// hosts it starts in about the time of an empty Go program.
package stage

// Spec is everything the stage applies, in the order it applies it.
type Spec struct {
	Path    string   `json:"path"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// NofileSoft, if not 0 and Rlimits sets no RLIMIT_NOFILE, is the soft
	// open-files limit the program starts with (the hard one kept): the
	// one the runner was started with, which the Go runtime of every
	// process in between raised for itself.
	NofileSoft uint64 `json:"nofile_soft,omitempty"`
	NNP        bool   `json:"nnp,omitempty"`
	// DropCaps clears the bounding, ambient, inheritable, permitted and
	// effective sets except KeepCaps (capability numbers).
	DropCaps bool  `json:"drop_caps,omitempty"`
	KeepCaps []int `json:"keep_caps,omitempty"`
	// Landlock is the ABI to enforce (0: none); RW the writable trees;
	// Nodes the device-node kinds the RW trees may create (NodeFIFO...).
	Landlock int      `json:"landlock,omitempty"`
	RW       []string `json:"rw,omitempty"`
	// RWFDs are descriptors of this process holding the RW trees, in
	// order, opened once by the runner: the rules are made from them,
	// never from the paths, which name whatever is there by now.
	RWFDs []int    `json:"rw_fds,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
	// Filters are the seccomp programs to install, in order, each a
	// struct sock_filter array (8 bytes per instruction, the machine's
	// byte order). The runner compiles a profile's (package filters) and
	// sends them here: the stage only loads them.
	Filters [][]byte `json:"filters,omitempty"`
	// PrivateTmp is where the mount view made the task's private temp
	// dir (View.Tmp), if it did: a tmpfs no descriptor of the runner can
	// hold, so its Landlock write rule is added in the task's own process
	// once the view is built (the only process that sees it when a
	// pooled task makes its view itself), from a descriptor opened there
	// with no symlink followed.
	PrivateTmp string `json:"private_tmp,omitempty"`
	// NetOpen leaves the network out of the Landlock ruleset: a network
	// namespace of the task's own (or the host's, by the policy's choice)
	// decides what it reaches, and Landlock's port rules cannot tell a
	// loopback connection from any other.
	NetOpen bool `json:"net_open,omitempty"`
}

// Rlimit is one resource limit, set as soft and hard limit so the task
// cannot raise it again.
type Rlimit struct {
	Name     string `json:"name"`
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// Seccomp profiles (compiled by package filters).
const (
	SeccompLandlock = "landlock"
	SeccompStrict   = "strict"
)

// Device-node kinds a policy may let the workspace create (none by default).
const (
	NodeFIFO  = "fifo"
	NodeSock  = "sock"
	NodeChar  = "char"
	NodeBlock = "block"
)

// Error says which step of the stage failed; Step "exec" is execve itself.
type Error struct {
	Step string
	Err  error
}

func (e *Error) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// View is the filesystem a task sees in its own mount namespace, set up
// by its supervisor (which has the capabilities for it, in the task's user
// namespace, or as root) before it forks the task.
type View struct {
	// Proc mounts a fresh /proc: the task's PID namespace, nothing outside.
	Proc bool `json:"proc,omitempty"`
	// ReadOnly makes every mount read-only except the RW trees (and a
	// fresh /dev/shm, on top of which the trees under /dev/shm are moved
	// back): chmod, chown, xattrs and timestamps of anything outside them
	// fail with EROFS, whoever owns the file.
	// The RW trees are mounted nosuid and nodev: a setuid binary or a
	// device node the task finds (or makes) there gives it nothing.
	ReadOnly bool     `json:"readonly,omitempty"`
	RW       []string `json:"rw,omitempty"`
	// Tmp makes the fresh /dev/shm the task's private temp dir as well
	// (its TMPDIR): TmpSize bytes (0: the kernel's default, half the
	// memory) instead of 64 MiB, and a host without /dev/shm fails the
	// view. It is empty at the start, in memory, and gone with the mount
	// namespace: nothing of it is on the host to make, remove or leave
	// behind. Only with ReadOnly, and never when an RW tree is /dev/shm
	// itself (the runner's plan decides).
	Tmp     bool   `json:"tmp,omitempty"`
	TmpSize uint64 `json:"tmp_size,omitempty"`
	// Cwd is the task's working directory (canonical), entered again
	// through the view once it is built.
	Cwd string `json:"cwd"`
}
