package queue

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// WorkDirName is the directory, at the top of a worker's policy workspace,
// that holds the per-attempt workspaces: WORKSPACE/.artq/work/TASK-ATTEMPT.
// It is never copied into a task's workspace, and a source inside it is
// refused.
const WorkDirName = ".artq"

// WorkspaceMode says where a task's command runs.
type WorkspaceMode string

// Workspace modes. The Task manifest is lib/execx's document and has no
// place for them, so they are a queue-level choice, stored beside the
// manifest in the enqueued event (RunSpec).
const (
	// WorkspaceShared runs the task in the worker's policy workspace, in the
	// task's own dir: every task sees and changes the same tree (the
	// default, and all a task without a RunSpec ever had).
	WorkspaceShared WorkspaceMode = "shared"
	// WorkspaceCopy runs the task in a fresh copy of the source directory,
	// made for each attempt.
	WorkspaceCopy WorkspaceMode = "copy"
	// WorkspaceWorktree runs the task in a fresh detached git worktree of
	// the source repository's HEAD, made for each attempt.
	WorkspaceWorktree WorkspaceMode = "worktree"
)

// WorkspaceModes lists every mode, for flags, schemas and parity tests.
var WorkspaceModes = []WorkspaceMode{WorkspaceShared, WorkspaceCopy, WorkspaceWorktree}

// Bounds of a RunSpec: it is a request, like the manifest beside it.
const (
	MaxAcceptanceWords = 256
	MaxAcceptanceBytes = 64 << 10
)

// RunSpec is how the worker runs a task beyond what the Task manifest says:
// the task's own workspace and the acceptance command the worker runs
// itself after the task's command succeeds. It is enqueued with the task
// (member "run" of the enqueued event) and part of its identity: the same id
// with another RunSpec is a conflict, like another manifest.
type RunSpec struct {
	// Workspace is the workspace mode; empty means shared.
	Workspace WorkspaceMode `json:"workspace,omitempty"`
	// Source is the directory (copy) or git repository (worktree) the
	// per-attempt workspace is made from, relative to the worker's policy
	// workspace like a Task's dir; empty means the policy workspace itself.
	Source string `json:"source,omitempty"`
	// Acceptance is a command (program and arguments) the worker runs
	// through a fresh runner call in the task's workspace after the task's
	// command exits 0; the task succeeds only if it exits 0 too.
	Acceptance []string `json:"acceptance,omitempty"`
}

// IsZero reports a spec that asks for nothing beyond the manifest (it is
// then not stored at all).
func (s *RunSpec) IsZero() bool {
	return s == nil || (s.Workspace == "" || s.Workspace == WorkspaceShared) && s.Source == "" && len(s.Acceptance) == 0
}

// Mode is the workspace mode with the default applied.
func (s *RunSpec) Mode() WorkspaceMode {
	if s == nil || s.Workspace == "" {
		return WorkspaceShared
	}
	return s.Workspace
}

// Validate checks the spec's own consistency (exit 2 naming the field); the
// worker checks the rest against its policy when it runs the task.
func (s *RunSpec) Validate() error {
	switch s.Mode() {
	case WorkspaceShared:
		if s.Source != "" {
			return jsonx.Errorf("run.source", "a source needs workspace copy or worktree (the shared workspace is the policy's)")
		}
	case WorkspaceCopy, WorkspaceWorktree:
		if s.Source != "" {
			if err := fsx.CheckRel(s.Source); err != nil {
				return jsonx.Errorf("run.source", "%v: it is relative to the worker's workspace", err)
			}
			if s.Source != filepath.Clean(s.Source) {
				return jsonx.Errorf("run.source", "%q is not a clean path (want %q)", s.Source, filepath.Clean(s.Source))
			}
			if first, _, _ := strings.Cut(s.Source, "/"); first == WorkDirName {
				return jsonx.Errorf("run.source", "%q is inside the workers' own %s directory", s.Source, WorkDirName)
			}
		}
	default:
		return jsonx.Errorf("run.workspace", "unknown mode %q (want %s)", s.Workspace, modeList())
	}
	if len(s.Acceptance) > 0 {
		if len(s.Acceptance) > MaxAcceptanceWords {
			return jsonx.Errorf("run.acceptance", "%d words, more than %d", len(s.Acceptance), MaxAcceptanceWords)
		}
		n := 0
		for i, w := range s.Acceptance {
			n += len(w)
			if strings.IndexByte(w, 0) >= 0 {
				return jsonx.Errorf(fmt.Sprintf("run.acceptance[%d]", i), "contains a NUL byte")
			}
		}
		if n > MaxAcceptanceBytes {
			return jsonx.Errorf("run.acceptance", "%d bytes, more than %d", n, MaxAcceptanceBytes)
		}
		if s.Acceptance[0] == "" {
			return jsonx.Errorf("run.acceptance[0]", "the program must not be empty")
		}
	}
	return nil
}

func modeList() string {
	out := make([]string, len(WorkspaceModes))
	for i, m := range WorkspaceModes {
		out[i] = string(m)
	}
	return strings.Join(out, ", ")
}

// encodeRunSpec is the stored form of a spec: nil for a zero spec (so a
// task enqueued without one keeps exactly the record it always had),
// otherwise compact JSON with the default mode left out.
func encodeRunSpec(s *RunSpec) ([]byte, error) {
	if s.IsZero() {
		return nil, nil
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := *s
	if c.Workspace == WorkspaceShared {
		c.Workspace = ""
	}
	data, err := jsonx.Marshal(&c)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "encode run spec: %w", err)
	}
	return data, nil
}

// DecodeRunSpec strictly decodes a stored spec; nil or empty data is the
// zero spec (shared workspace, no acceptance).
func DecodeRunSpec(data []byte) (*RunSpec, error) {
	s := &RunSpec{}
	if len(data) == 0 {
		return s, nil
	}
	if err := jsonx.Unmarshal(data, "run", s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}
