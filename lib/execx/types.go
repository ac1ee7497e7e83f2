// Package execx is the bounded runner every art tool uses to start a process:
// a program allowlist resolved only in the policy's path, workspace
// confinement, a fresh environment, process groups, timeouts, cancellation,
// bounded head-and-tail output capture, rlimits and Landlock/namespace
// isolation.
//
// Two documents with different owners meet here: the Policy (the operator:
// what may run) and the Task (the requester: what to run). A Task can never
// widen its Policy. Killing a process group is termination, not isolation: a
// command can still cause side effects before it is stopped.
package execx

import (
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// Document kinds.
const (
	KindPolicy = "Policy"
	KindTask   = "Task"
	KindResult = "Result"
)

// Isolation names an isolation backend.
type Isolation string

// Isolation backends (docs/artexec.md).
const (
	IsolationNone     Isolation = "none"
	IsolationLandlock Isolation = "landlock"
	IsolationStrict   Isolation = "strict"
	IsolationSeatbelt Isolation = "seatbelt"
)

// Isolations lists every backend, for flags, schemas and parity tests.
var Isolations = []Isolation{IsolationNone, IsolationLandlock, IsolationStrict, IsolationSeatbelt}

// DefaultEnvAllow is the environment a child gets when neither policy nor
// task says otherwise: enough for tools like go (which needs HOME), nothing
// that carries credentials.
var DefaultEnvAllow = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", "TERM"}

// Policy is the operator's document: what may run, where, and the ceilings a
// task may not exceed.
type Policy struct {
	jsonx.TypeMeta
	Allow     []string `json:"allow"`
	Workspace string   `json:"workspace"`
	// Path and EnvAllow distinguish absent (nil: the default) from
	// empty ([]: no directories, no variables); omitzero keeps an empty
	// list in the encoding so a round trip cannot widen the policy.
	Path      []string  `json:"path,omitzero"`
	EnvAllow  []string  `json:"env_allow,omitzero"`
	Isolation Isolation `json:"isolation,omitempty"`
	// IsolationBestEffort runs with what the kernel supports instead of
	// refusing; the Result still says exactly what was enforced.
	IsolationBestEffort bool `json:"isolation_best_effort,omitempty"`
	// Max holds ceilings; a zero field means the built-in ceiling.
	Max Limits `json:"max,omitzero"`
	// KeepCapabilities names the capabilities (CAP_NET_BIND_SERVICE, ...)
	// a task started as root keeps under landlock and strict; every other
	// one is dropped from all five sets before the program starts. Empty
	// (the default): none is kept, root's task is as powerless as any user's.
	KeepCapabilities []string `json:"keep_capabilities,omitempty"`
	// WorkspaceNodes are the kinds of special file (fifo, sock, char,
	// block) a task may create beneath the workspace under landlock and
	// strict. Empty (the default): none, not even a FIFO.
	WorkspaceNodes []string `json:"workspace_nodes,omitempty"`
	// Network is how much of the network a task reaches (see
	// NetworkMode); empty: the backend's default.
	Network NetworkPolicy `json:"network,omitzero"`
}

// DocumentKind implements jsonx.Document.
func (*Policy) DocumentKind() string { return KindPolicy }

// Task is the requester's document: what to run.
type Task struct {
	jsonx.TypeMeta
	ID      string   `json:"id,omitempty"`
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Dir is relative to the workspace; default ".".
	Dir string `json:"dir,omitempty"`
	// Context files are relative to the workspace, concatenated in order
	// onto the child's stdin.
	Context []string `json:"context,omitempty"`
	Env     TaskEnv  `json:"env,omitzero"`
	Limits  Limits   `json:"limits,omitzero"`
}

// DocumentKind implements jsonx.Document.
func (*Task) DocumentKind() string { return KindTask }

// TaskEnv selects the child's environment: names in both the policy's and
// the task's allow lists, plus Set.
type TaskEnv struct {
	// Allow nil means the policy's list; [] means no variables.
	Allow []string          `json:"allow,omitzero"`
	Set   map[string]string `json:"set,omitempty"`
}

// Limits bound one run. Zero means "default" in a Task and "built-in
// ceiling" in a Policy's Max.
type Limits struct {
	Timeout      jsonx.Duration `json:"timeout,omitempty"`
	KillAfter    jsonx.Duration `json:"kill_after,omitempty"`
	Grace        jsonx.Duration `json:"grace,omitempty"`
	OutputBytes  int64          `json:"output_bytes,omitempty"`
	ContextBytes int64          `json:"context_bytes,omitempty"`
	CPUSeconds   int64          `json:"cpu_seconds,omitempty"`
	MemoryBytes  int64          `json:"memory_bytes,omitempty"`
	Processes    int64          `json:"processes,omitempty"`
	FileBytes    int64          `json:"file_bytes,omitempty"`
	OpenFiles    int64          `json:"open_files,omitempty"`
}

// Status is the outcome of a run.
type Status string

// Result statuses (docs/artexec.md).
const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusTimedOut  Status = "timed_out"
	StatusCancelled Status = "cancelled"
	StatusRejected  Status = "rejected"
	StatusError     Status = "error"
)

// Statuses lists every status, for schemas and parity tests.
var Statuses = []Status{StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled, StatusRejected, StatusError}

// Result is what a run produced. It is printed whenever a process was
// started, whatever happened to it.
//
// Output is the head and tail of what the program wrote, OutputBytes every
// byte of it, and OutputOmitted (present exactly when OutputTruncated) how
// many bytes were cut from the middle: read it rather than parsing the
// marker in Output. With Options.Stderr the program has a standard error
// of its own: Output and its counts are then standard output alone,
// StderrBytes counts every byte written to stderr and StderrDropped those
// Options.Stderr did not receive (over Options.StderrBytes, or after it
// failed); both are absent when zero, and always when the two streams
// shared the output.
type Result struct {
	jsonx.TypeMeta
	TaskID           string          `json:"task_id,omitempty"`
	Program          string          `json:"program"`
	ResolvedPath     string          `json:"resolved_path,omitempty"`
	Argc             int             `json:"argc"`
	Status           Status          `json:"status"`
	ExitCode         int             `json:"exit_code"`
	Signal           string          `json:"signal,omitempty"`
	TimedOut         bool            `json:"timed_out"`
	Cancelled        bool            `json:"cancelled"`
	StartedAt        time.Time       `json:"started_at"`
	EndedAt          time.Time       `json:"ended_at"`
	DurationMS       int64           `json:"duration_ms"`
	Output           string          `json:"output"`
	OutputBytes      int64           `json:"output_bytes"`
	OutputTruncated  bool            `json:"output_truncated"`
	OutputOmitted    int64           `json:"output_omitted,omitempty"`
	OutputIncomplete bool            `json:"output_incomplete"`
	StderrBytes      int64           `json:"stderr_bytes,omitempty"`
	StderrDropped    int64           `json:"stderr_dropped,omitempty"`
	Isolation        IsolationReport `json:"isolation"`
	// Network is the run's network mode and, under network allow, every
	// destination the proxy let the task reach or refused it.
	Network *NetworkReport `json:"network,omitempty"`
	Rusage  Rusage         `json:"rusage"`
	Error   string         `json:"error,omitempty"`
	// TimeoutMS is the wall-clock limit that ended the run (timed_out
	// only), so a reason can say "limit 5s, ran 5.2s".
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Killed: the program outlived SIGTERM by --kill-after and the runner
	// sent SIGKILL to its process group.
	Killed bool `json:"killed,omitempty"`
	// ToolExitCode is the code artexec exits with for this Result
	// (CLICode): the child's own, or as GNU timeout gives it, 124 timed
	// out, 137 when the SIGKILL was needed; 130 cancelled. ExitCode and
	// Signal stay the child's raw status, so a timed-out Result reads
	// exit_code 143, signal SIGTERM, tool_exit_code 124.
	ToolExitCode int `json:"tool_exit_code"`
	// KilledAtEnd counts the processes of the task still running when
	// its program had ended and the runner cleaned up: each was killed.
	// Counted in the task's cgroup where it has one, else by its
	// supervisor when it kills them (see Leftover); not on macOS.
	KilledAtEnd int `json:"killed_at_end,omitempty"`
	// Leftover counts the processes of the task still alive when the
	// runner gave up waiting for the cleanup (at least 1 when it could
	// not count them). A Result with Leftover is never a success: its
	// Status is error and its ToolExitCode 125, whatever the program did.
	Leftover int `json:"leftover,omitempty"`
}

// IsolationReport says exactly what was enforced, never what was merely
// requested.
//
// Dropped is set only with best effort: each layer the backend has that
// this run went without, as "layer: why".
type IsolationReport struct {
	Backend  Isolation `json:"backend"`
	Enforced []string  `json:"enforced"`
	Dropped  []string  `json:"dropped,omitempty"`
}

// Rusage is the child's resource usage as reported by wait4.
type Rusage struct {
	UserMS   int64 `json:"user_ms"`
	SysMS    int64 `json:"sys_ms"`
	MaxRSSKB int64 `json:"max_rss_kb"`
}
