// Package shim is the code of the process execx starts between the
// runner and a task's program: the per-task supervisor (subreaper,
// mini-init, group kill), which forks the task's own process so that it
// restricts itself before execve (package stage). It is a Go process of
// its own: either the minimal binary cmd/artexec-shim, which links this
// package and nothing of the tools (no CLI, no queue, no NATS) and so
// starts in about the time of an empty Go program, or, where that binary
// is not installed beside the tool, the tool's own binary re-executed
// (every main that runs tasks calls execx.IsShim first). Both run exactly
// this code. (On macOS, which has no supervisor, the shim is the exec
// stage itself: it sets the rlimits and execs the program.)
//
// The package stays small on purpose: the standard library, x/sys, the
// stage package and exitcode. Whatever it imports, every task pays for at
// each start.
package shim

import (
	"fmt"
	"io"
	"os"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// Arg0 is the argv[0] the runner gives a shim. A real invocation never
// has it.
const Arg0 = "art-execx-shim"

// Is reports whether this process is a shim started by execx: argv is
// exactly Arg0 and a mode.
func Is() bool {
	return len(os.Args) == 2 && os.Args[0] == Arg0
}

// Main runs the shim and returns its exit status. It reads its
// instructions from the runner on file descriptor 3 and never looks at
// flags or the environment. Outside a shim it says so and returns
// exitcode.Usage.
func Main() int {
	if !Is() {
		fmt.Fprintln(os.Stderr, "art-execx-shim: not a command: execx starts it for each task (artexec, artq, artagent)")
		return exitcode.Usage
	}
	return run(os.Args[1])
}

// Spec is everything a shim needs, sent by the runner on fd 3 (encoded
// as wire.go says; the json names are the field names its errors use):
// what the exec stage applies and, for a supervisor, how to supervise.
type Spec struct {
	// Proto is Protocol as the runner was built with it (set by Encode).
	Proto int        `json:"proto"`
	Stage stage.Spec `json:"stage"`
	// Direct: the supervisor starts the program itself (nothing to apply
	// between fork and execve but a new session, which fork does).
	Direct bool        `json:"direct,omitempty"`
	View   *stage.View `json:"view,omitempty"` // mount view the supervisor sets up
	// StageView is a mount view the task gets without its supervisor
	// leaving the runner's mount namespace (landlock as root on a pooled
	// supervisor): the task's own process builds it in a mount namespace
	// of its own between fork and execve, before its restrictions (see
	// startRestricted).
	StageView *stage.View `json:"stage_view,omitempty"`
	PIDNS     bool        `json:"pidns,omitempty"` // the supervisor is PID 1
	// MapIDs: the supervisor is in a new user namespace and maps UID and
	// GID (the runner's) to themselves before anything else.
	MapIDs    bool `json:"map_ids,omitempty"`
	UID       int  `json:"uid,omitempty"`
	GID       int  `json:"gid,omitempty"`
	Supervise bool `json:"supervise,omitempty"`
	// Stderr: the supervisor holds the program's own stderr pipe on fd 7
	// (else fd 6, the output pipe, is both stdout and stderr).
	Stderr bool `json:"stderr,omitempty"`
	// RWTrees is how many descriptors on the writable trees (View.RW,
	// Stage.RW, in that order) the supervisor holds: from RWFD up in a
	// supervisor of its own, the last ones of the message in a serving
	// one. The view is bound and the Landlock rules made from them.
	RWTrees int `json:"rw_trees,omitempty"`
	// Loopback: the supervisor is in a network namespace of the task's
	// own and brings its lo up (network loopback and allow).
	Loopback bool `json:"loopback,omitempty"`
	// ProxyPort: the supervisor listens on 127.0.0.1:ProxyPort of that
	// namespace and sends the listener to the runner over the socket on
	// NetFD, for the runner's proxy to accept the task's connections on
	// (network allow). No other namespace has the listener.
	ProxyPort int `json:"proxy_port,omitempty"`
	// Cgroup: the supervisor holds the task's cgroup v2 directory (opened)
	// — a one-shot supervisor on CgroupFD, a serving one in the serve
	// message after stderr and before the writable trees — and starts the
	// program in it (clone3 with CLONE_INTO_CGROUP).
	Cgroup bool `json:"cgroup,omitempty"`
}

// Protocol is the version of Spec and Msg. The runner and the shim may be
// different binaries (an artexec-shim installed beside the tool): a shim
// refuses a spec of another protocol and any field it does not know, so a
// stale artexec-shim never runs a task with less than the runner asked for.
// Bump it whenever the meaning of a field changes. 2: the serve mode
// (a long-lived supervisor, see ServeRun) and its "idle" report. 3: the
// serve message carries the spec, and a supervisor closes its control
// pipe once nothing of the task is left. 4: StageView, and the writable
// trees of Options.Writable after the temp dir. 5: no exec stage process
// (the supervisor forks the restricted child itself). 6: the spec's own
// binary encoding (wire.go) instead of JSON.
const Protocol = 6

// Descriptors of a supervisor shim: 3 spec, 4 status, 5 control, then the
// program's output pipe and, with Spec.Stderr, its stderr pipe.
const (
	OutFD = 6
	ErrFD = 7
	NetFD = 8 // with Spec.ProxyPort; closed without it
	// CgroupFD is the task's cgroup directory (Spec.Cgroup); closed without.
	CgroupFD = 9
	// RWFD is the first of Spec.RWTrees descriptors on the writable trees.
	RWFD = 10
)

// errFD is the supervisor's descriptor that becomes the program's stderr.
func (s *Spec) errFD() uintptr {
	if s.Stderr {
		return ErrFD
	}
	return OutFD
}

func readSpec() (*Spec, error) { return readSpecFrom(os.NewFile(3, "spec")) }

// readSpecFrom reads a whole spec from f and closes it.
func readSpecFrom(f *os.File) (*Spec, error) {
	if f == nil {
		return nil, fmt.Errorf("shim: no spec descriptor")
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("shim: read spec: %w", err)
	}
	return decodeSpec(b)
}
