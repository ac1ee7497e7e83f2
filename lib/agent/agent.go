// Package agent owns the agent loop: one decision per step from a
// provider, every action a request checked by the runner (lib/execx) or the
// workspace editor (lib/workspace), verification debt, observations cut to
// a bound, budgets, a durable transcript, and AgentEvent JSON Lines.
//
// What the loop refuses is the point of it. A provider cannot widen what
// runs: run_tool goes through execx's allowlist under the operator's
// Policy, read_file and replace_text through the confined editor, and
// verify runs the operator's command exactly as configured, never anything
// the model wrote. finish is refused while an edit is not covered by a
// passing verify. The loop does not retry a failed provider call; resuming
// the transcript is the explicit retry.
//
// Limits it does not hide: run_tool may change files too (an allowed
// program is a capability: allow only what you would let the model run
// unverified); verify proves only that the operator's command passed, not
// that it tests the right thing.
package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Status is how a run ended.
type Status string

// Run statuses (docs/artagent.md).
const (
	StatusFinished      Status = "finished"
	StatusStepLimit     Status = "step_limit"
	StatusBudgetLimit   Status = "budget_limit"
	StatusTimeout       Status = "timeout"
	StatusDenied        Status = "denied"
	StatusFormatError   Status = "format_error"
	StatusProviderError Status = "provider_error"
	StatusCancelled     Status = "cancelled"
	// StatusTruncated: MaxTruncations replies in a row were cut off at the
	// provider's token limit (a reply cut once is a step, told to the
	// model, and not a format error).
	StatusTruncated Status = "truncated"
)

// Statuses lists every status, for schemas and parity tests.
var Statuses = []Status{StatusFinished, StatusStepLimit, StatusBudgetLimit, StatusTimeout, StatusDenied, StatusFormatError, StatusProviderError, StatusCancelled, StatusTruncated}

// Defaults.
const (
	DefaultMaxSteps         = 30
	DefaultObservationBytes = 16384
	DefaultMaxFormatErrors  = 3
	// MaxTruncations ends a run (status truncated) after this many replies
	// in a row were cut off at the provider's token limit: a model that
	// cannot fit its decision in the limit twice running will not a third
	// time, and every attempt costs a full limit of tokens.
	MaxTruncations       = 2
	DefaultToolTimeout   = 2 * time.Minute
	DefaultVerifyTimeout = 10 * time.Minute
	// MinObservationBytes leaves room for the elision marker and some text
	// on both sides of it.
	MinObservationBytes = 256
	// MaxObservationBytes bounds what one step shows a model (and what the
	// runner buffers for a tool's output).
	MaxObservationBytes = 16 << 20
)

// Config is the operator's side of a run. Nothing in it comes from the
// model.
type Config struct {
	// Task is what the model is asked to do: required by Run, optional for
	// NewCore (a client brings its own), recorded in the transcript.
	Task      string
	Workspace string
	// Allow names the programs run_tool may start (bare names, looked up
	// in PATH by execx).
	Allow []string
	// Verify is the verification command, program and arguments, run
	// exactly as given. Its program need not be in Allow: the operator
	// configured it, the model cannot change it. A program given as a path
	// is resolved against the current directory once, here.
	Verify []string
	// Policy, if set, is the operator's execx policy document for
	// run_tool (and, with the verify program as its only allowed name, for
	// verify): its allowlist, search path, environment, isolation and
	// ceilings. Its workspace must be empty or Workspace. Allow, Env and
	// Isolation must then be unset: the document is the whole policy.
	Policy *execx.Policy
	// Env names environment variables tools and verify receive in addition
	// to execx.DefaultEnvAllow.
	Env []string
	// Environ is where variable values come from; nil means os.Environ().
	Environ             []string
	Isolation           execx.Isolation
	IsolationBestEffort bool
	// Network is the network of tools and verify (execx.NetworkPolicy:
	// mode and allowlist); zero means the isolation's default. Unset with
	// Policy, whose own network field applies.
	Network execx.NetworkPolicy

	MaxSteps         int
	ObservationBytes int
	MaxFormatErrors  int
	// Deadline bounds this process's run in wall-clock time (0: none).
	Deadline time.Duration
	// MaxTokens stops the run before a provider call once the summed
	// reported tokens reach it (0: none; providers that report nothing are
	// not limited by it).
	MaxTokens     int64
	ToolTimeout   time.Duration
	VerifyTimeout time.Duration
	// MaxFileBytes caps files read and edited (0: the editor's default).
	MaxFileBytes int64
	// Provider names the provider, for the transcript.
	Provider string
}

// Default fills zero fields.
func (c *Config) Default() {
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.ObservationBytes == 0 {
		c.ObservationBytes = DefaultObservationBytes
	}
	if c.MaxFormatErrors == 0 {
		c.MaxFormatErrors = DefaultMaxFormatErrors
	}
	if c.ToolTimeout == 0 {
		c.ToolTimeout = DefaultToolTimeout
	}
	if c.VerifyTimeout == 0 {
		c.VerifyTimeout = DefaultVerifyTimeout
	}
	if c.Isolation == "" {
		c.Isolation = execx.IsolationNone
	}
}

// Validate checks the configuration of a loop on its own (exit 2): the
// refusal is an *exitcode.FieldError naming the Config field.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.Task) == "" {
		return exitcode.Field(exitcode.Usage, "Task", "", "required and must not be blank")
	}
	return c.check()
}

// negative names the first duration or size of c below zero.
func negative(c *Config) string {
	switch {
	case c.Deadline < 0:
		return "Deadline"
	case c.ToolTimeout < 0:
		return "ToolTimeout"
	case c.VerifyTimeout < 0:
		return "VerifyTimeout"
	case c.MaxTokens < 0:
		return "MaxTokens"
	}
	return "MaxFileBytes"
}

// check is Validate without the task, which a core driven by a client does
// not need (NewCore).
func (c *Config) check() error {
	switch {
	case c.Workspace == "":
		return exitcode.Field(exitcode.Usage, "Workspace", "", "required")
	case len(c.Verify) == 0 || c.Verify[0] == "":
		return exitcode.Field(exitcode.Usage, "Verify", "", "a command is required")
	case c.MaxSteps < 1:
		return exitcode.Field(exitcode.Usage, "MaxSteps", "", "must be at least 1, got %d", c.MaxSteps)
	case c.ObservationBytes < MinObservationBytes:
		return exitcode.Field(exitcode.Usage, "ObservationBytes", "", "must be at least %d, got %d", MinObservationBytes, c.ObservationBytes)
	case c.ObservationBytes > MaxObservationBytes:
		return exitcode.Field(exitcode.Usage, "ObservationBytes", "", "must be at most %d, got %d", MaxObservationBytes, c.ObservationBytes)
	case c.MaxFormatErrors < 1:
		return exitcode.Field(exitcode.Usage, "MaxFormatErrors", "", "must be at least 1, got %d", c.MaxFormatErrors)
	case c.Deadline < 0, c.ToolTimeout < 0, c.VerifyTimeout < 0, c.MaxTokens < 0, c.MaxFileBytes < 0:
		return exitcode.Fieldf(exitcode.Usage, negative(c), "", "deadline, timeouts, max-tokens and file sizes must not be negative")
	}
	if c.Policy != nil && (len(c.Allow) > 0 || len(c.Env) > 0 || (c.Isolation != "" && c.Isolation != execx.IsolationNone) || c.IsolationBestEffort || c.Network.Mode != "" || len(c.Network.Allow) > 0) {
		return exitcode.Fieldf(exitcode.Usage, "Policy", "", "%s: %s, %s and %s come from the policy document; do not also give them",
			exitcode.Ref("Policy"), exitcode.Ref("Allow"), exitcode.Ref("Env"), exitcode.Ref("Isolation"))
	}
	for _, name := range c.Allow {
		if name == "" || strings.ContainsAny(name, "/\x00") {
			return exitcode.Fieldf(exitcode.Usage, "Allow", name, "%s: %q is not a bare program name", exitcode.Ref("Allow"), name)
		}
	}
	return nil
}

// Result is the outcome of a run, and the body of the final result event.
type Result struct {
	Status   Status
	Steps    int
	Edits    int
	Verified bool
	Debt     bool
	// Usage sums what the provider reported; nil when it reported nothing.
	Usage *provider.Usage
	// Latency sums provider call times.
	Latency time.Duration
	Summary string
	// Err says why a run that did not finish stopped.
	Err error
}

// ExitCode is the process exit code for this result: 0 only for a verified
// finish, 130 when cancelled, 1 otherwise.
func (r *Result) ExitCode() int {
	switch {
	case r.Status == StatusFinished && r.Verified:
		return exitcode.OK
	case r.Status == StatusCancelled:
		return exitcode.Cancelled
	}
	return exitcode.Failed
}

// ErrResumeFinished refuses to resume a run that already finished.
var ErrResumeFinished = exitcode.Sentinel(exitcode.Conflict, "the transcript's run already finished")

// ErrResumeMismatch refuses to resume with a different task, workspace or
// verify command: the history would describe another run.
var ErrResumeMismatch = exitcode.Sentinel(exitcode.Conflict, "resume: the run's configuration differs from the transcript's")

// verifyPolicy is the policy verify runs under: the tools' policy with the
// verify program as its only allowed name; a program given as a path is
// looked up only in its own directory.
func verifyPolicy(tools *execx.Policy, verify []string) (*execx.Policy, string, error) {
	p := *tools
	p.EnvAllow = slices.Clone(tools.EnvAllow)
	prog := verify[0]
	if strings.Contains(prog, "/") {
		abs, err := filepath.Abs(prog)
		if err != nil {
			return nil, "", fmt.Errorf("verify: %w", err)
		}
		p.Path = []string{filepath.Dir(abs)}
		prog = filepath.Base(abs)
	}
	p.Allow = []string{prog}
	return &p, prog, nil
}

// toolsPolicy is the policy every run_tool is checked against.
func toolsPolicy(c *Config, root string) (*execx.Policy, error) {
	if c.Policy != nil {
		p := *c.Policy
		if p.Workspace != "" {
			ws, err := filepath.EvalSymlinks(p.Workspace)
			if err != nil || ws != root {
				return nil, exitcode.Field(exitcode.Usage, "Policy.Workspace", "", "%s is not the workspace %s", p.Workspace, root)
			}
		}
		p.Workspace = root
		p.Allow = slices.Clone(p.Allow)
		p.Default()
		return &p, nil
	}
	env := slices.Clone(execx.DefaultEnvAllow)
	for _, n := range c.Env {
		if !slices.Contains(env, n) {
			env = append(env, n)
		}
	}
	p := &execx.Policy{
		TypeMeta:            jsonx.Meta(execx.KindPolicy),
		Allow:               slices.Clone(c.Allow),
		Workspace:           root,
		EnvAllow:            env,
		Isolation:           c.Isolation,
		IsolationBestEffort: c.IsolationBestEffort,
		Network:             c.Network,
	}
	p.Default()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

var errDeadline = errors.New("run deadline reached")

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
