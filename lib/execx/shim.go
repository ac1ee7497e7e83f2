package execx

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// shimArg0 is the argv[0] the runner gives itself when it re-executes its
// own binary as a shim. A real invocation never has it.
const shimArg0 = "art-execx-shim"

// IsShim reports whether this process is a shim started by execx. Every
// main (and TestMain) of a binary that runs tasks through execx begins with
//
//	if execx.IsShim() { os.Exit(execx.RunShim()) }
//
// because Go cannot run code between fork and execve: the per-task
// supervisor and the exec stage (package stage), which applies every
// restriction to the task's own process, are this binary re-executed.
func IsShim() bool {
	return len(os.Args) == 2 && os.Args[0] == shimArg0
}

// RunShim runs the shim and returns its exit status. It reads its
// instructions from the runner on file descriptor 3 and never looks at
// flags or the environment.
func RunShim() int {
	if !IsShim() {
		fmt.Fprintln(os.Stderr, "execx: RunShim called outside a shim")
		return exitcode.Internal
	}
	return runShim(os.Args[1])
}

// shimSpec is everything a shim needs, sent by the runner on fd 3: what
// the exec stage applies and, for a supervisor, how to supervise.
type shimSpec struct {
	Stage stage.Spec `json:"stage"`
	// Direct: the supervisor starts the program itself (nothing to apply
	// between fork and execve but a new session, which fork does).
	Direct bool        `json:"direct,omitempty"`
	View   *stage.View `json:"view,omitempty"`  // mount view the supervisor sets up
	PIDNS  bool        `json:"pidns,omitempty"` // the supervisor is PID 1
	// MapIDs: the supervisor is in a new user namespace and maps UID and
	// GID (the runner's) to themselves before anything else.
	MapIDs    bool `json:"map_ids,omitempty"`
	UID       int  `json:"uid,omitempty"`
	GID       int  `json:"gid,omitempty"`
	Supervise bool `json:"supervise,omitempty"`
	// Stderr: the supervisor holds the program's own stderr pipe on fd 7
	// (else fd 6, the output pipe, is both stdout and stderr).
	Stderr bool `json:"stderr,omitempty"`
}

// Descriptors of a supervisor shim: 3 spec, 4 status, 5 control, then the
// program's output pipe and, with shimSpec.Stderr, its stderr pipe.
const (
	shimOutFD = 6
	shimErrFD = 7
)

// errFD is the supervisor's descriptor that becomes the program's stderr.
func (s *shimSpec) errFD() uintptr {
	if s.Stderr {
		return shimErrFD
	}
	return shimOutFD
}

func readSpec() (*shimSpec, error) {
	f := os.NewFile(3, "spec")
	if f == nil {
		return nil, fmt.Errorf("shim: no spec descriptor")
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("shim: read spec: %w", err)
	}
	var s shimSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("shim: decode spec: %w", err)
	}
	return &s, nil
}
