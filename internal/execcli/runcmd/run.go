// Package runcmd is `artexec run` without its grammar: the command's
// flags (Cmd), building the Task and Policy from them, running the task and
// printing its Result, and the parser of run's plain forms (Fast). It does
// not import kong: the artexec binary, which starts every task a script or
// CI job runs, is this package and lib/execx alone; every other form goes
// to the artexec-cli binary (package execcli), whose kong grammar embeds
// Cmd (docs/artexec.md, "Two binaries").
package runcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Cmd is `artexec run`'s flags and program: the grammar in package
// execcli is this struct, so kong and Fast fill the same fields.
type Cmd struct {
	// Policy: the operator's side.
	Policy              string        `name:"policy" placeholder:"FILE" env:"ART_POLICY" group:"Policy" help:"Policy document. Without it the policy is built from the flags below; with it those flags may only narrow it."`
	Allow               []string      `name:"allow" placeholder:"NAME" names:"" group:"Policy" help:"Program that may run (bare name, repeatable). Without --policy and without --allow, the program named after -- is allowed."`
	Workspace           string        `name:"workspace" placeholder:"DIR" group:"Policy" help:"Workspace root the task cannot leave (default: the current directory; with --policy: a directory beneath the policy's)."`
	Isolation           string        `name:"isolation" placeholder:"none|landlock|strict|seatbelt" enum:",none,landlock,strict,seatbelt" default:"" group:"Policy" help:"Isolation backend (with --policy: only a stronger one)."`
	IsolationBestEffort bool          `name:"isolation-best-effort" group:"Policy" help:"Run with whatever isolation this machine can enforce instead of refusing (exit 125); the Result lists what was enforced."`
	Network             string        `name:"network" placeholder:"host|allow|loopback|none" enum:",host,allow,loopback,none" default:"" group:"Policy" help:"Network the task reaches: host; allow (loopback plus --allow-host destinations through art's proxy); loopback (its own lo only); none. Default: host under none, none under landlock, loopback under strict. With --policy: only a narrower one (host > allow > loopback > none)."`
	AllowHost           []string      `name:"allow-host" placeholder:"HOST[:PORT]" sep:"none" group:"Policy" help:"Destination the proxy lets a --network allow task reach (repeatable): a name, *.SUFFIX for the names beneath it, an address; port 443 when none is given. Implies --network allow. With --policy: only destinations its network.allow lists."`
	MaxTimeout          time.Duration `name:"max-timeout" placeholder:"D" group:"Policy" help:"Ceiling for --timeout (default 24h)."`
	MaxOutput           int64         `name:"max-output" placeholder:"N" group:"Policy" help:"Ceiling for --output-bytes (default 64 MiB)."`

	// Task: the requester's side.
	Manifest    string        `name:"manifest" placeholder:"FILE|-" group:"Task" help:"Task manifest (- for stdin). Task flags override its fields; --context, --env and --set add to them."`
	Cwd         string        `name:"cwd" placeholder:"D" group:"Task" help:"Working directory, relative to the workspace (default .)."`
	Timeout     time.Duration `name:"timeout" placeholder:"D" group:"Task" help:"Wall-clock limit (default 10m): then SIGTERM to every process of the task, exit 124."`
	KillAfter   time.Duration `name:"kill-after" placeholder:"D" group:"Task" help:"SIGKILL this long after SIGTERM (default 5s)."`
	Grace       time.Duration `name:"grace" placeholder:"D" group:"Task" help:"After the program exits, wait at most this long for its output pipe to close (default 2s)."`
	OutputBytes int64         `name:"output-bytes" placeholder:"N" group:"Task" help:"Keep at most N bytes of output, head and tail (default 1 MiB); the rest is counted."`
	Context     []string      `name:"context" placeholder:"FILE" sep:"none" group:"Task" help:"File beneath the workspace fed to stdin, in order (repeatable). Without any, stdin is /dev/null."`
	Env         []string      `name:"env" placeholder:"NAME" names:"" group:"Task" help:"Pass this variable from the environment too (repeatable; no comma lists)."`
	Set         []string      `name:"set" placeholder:"K=V" sep:"none" group:"Task" help:"Set a variable in the child's environment (repeatable)."`
	CPUSeconds  int64         `name:"cpu-seconds" placeholder:"N" group:"Task" help:"RLIMIT_CPU."`
	MemoryBytes int64         `name:"memory-bytes" placeholder:"N" group:"Task" help:"RLIMIT_AS (address space, not resident memory)."`
	Processes   int64         `name:"processes" placeholder:"N" group:"Task" help:"RLIMIT_NPROC (counts every process of the user; not applied to root)."`
	FileBytes   int64         `name:"file-bytes" placeholder:"N" group:"Task" help:"RLIMIT_FSIZE."`
	OpenFiles   int64         `name:"open-files" placeholder:"N" group:"Task" help:"RLIMIT_NOFILE."`
	Stream      bool          `name:"stream" help:"With JSON output: also copy the program's output live to stderr. In text mode the output is already live (no copy is added)."`
	Result      string        `name:"result" placeholder:"FILE" help:"Also write the Result (JSON) to FILE once the program ended; with -o text stdout and stderr stay the program's own."`

	Command []string `arg:"" optional:"" passthrough:"partial" name:"program" help:"PROGRAM and its arguments, after --."`
}

// Build does everything that comes before a process can start: reading
// and checking the documents and flags. Nothing in it has side effects
// beyond reading files (and stdin for --manifest -).
func (c *Cmd) Build(std clibase.IO) (*execx.Task, *execx.Policy, error) {
	if len(c.Command) > 0 && c.Command[0] == "--" { // kong keeps the separator
		c.Command = c.Command[1:]
	}
	if c.Manifest != "" && len(c.Command) > 0 {
		return nil, nil, exitcode.Errorf(exitcode.Usage, "give either --manifest or -- PROGRAM ARGS, not both")
	}
	if c.Manifest == "" && len(c.Command) == 0 {
		return nil, nil, exitcode.Errorf(exitcode.Usage, "nothing to run: give -- PROGRAM ARGS or --manifest FILE")
	}
	if c.Result != "" {
		if fi, err := os.Stat(filepath.Dir(c.Result)); err != nil || !fi.IsDir() {
			return nil, nil, exitcode.Errorf(exitcode.Usage, "--result %s: no directory %s to write it in", c.Result, filepath.Dir(c.Result))
		}
	}
	t, err := c.task(std)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.policy(t)
	if err != nil {
		return nil, nil, err
	}
	return t, p, nil
}

// Runner runs a task: execx.Run, or a wrapper of it that also emits the
// run's events (package execcli, --events).
type Runner func(context.Context, *execx.Policy, *execx.Task, execx.Options) (*execx.Result, error)

// Execute runs the task with run and prints its Result, as JSON or, when
// json is false, as the program's own live output and a summary line. An
// error from run means nothing started; once something did, the Result is
// printed and the exit code is the Result's.
func (c *Cmd) Execute(ctx context.Context, std clibase.IO, json bool, run Runner, t *execx.Task, p *execx.Policy) error {
	opt := execx.Options{}
	switch {
	case !json:
		// Text mode is "run the program": its stdout and stderr pass
		// through as it writes them (a CI job killed mid-run has logged
		// everything so far), never held for the end and never twice.
		opt.Stream, opt.Stderr = std.Out, std.Err
	case c.Stream:
		opt.Stream = std.Err
	}
	res, err := run(ctx, p, t, opt)
	if err != nil {
		return err
	}
	if c.Result != "" {
		if err := writeResult(c.Result, res); err != nil {
			return printError{err}
		}
	}
	if err := printResult(std, json, res); err != nil {
		if errors.Is(err, syscall.EPIPE) && res.CLICode() != 0 {
			// The reader left early: the exit code still says how the
			// program ended (cli turns a bare EPIPE into a quiet 0).
			return exitcode.Quiet(res.CLICode())
		}
		return printError{err}
	}
	if code := res.CLICode(); code != 0 {
		return exitcode.Quiet(code)
	}
	return nil
}

// task builds the Task from the manifest and the task flags.
func (c *Cmd) task(std clibase.IO) (*execx.Task, error) {
	var t *execx.Task
	if c.Manifest != "" {
		data, err := readManifest(std, c.Manifest)
		if err != nil {
			return nil, err
		}
		if t, err = execx.DecodeTask(data); err != nil {
			return nil, err
		}
	} else {
		t = execx.NewTask(c.Command[0], c.Command[1:]...)
	}
	if c.Cwd != "" {
		t.Dir = c.Cwd
	}
	set := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v
		}
	}
	set((*int64)(&t.Limits.Timeout), int64(c.Timeout))
	set((*int64)(&t.Limits.KillAfter), int64(c.KillAfter))
	set((*int64)(&t.Limits.Grace), int64(c.Grace))
	set(&t.Limits.OutputBytes, c.OutputBytes)
	set(&t.Limits.CPUSeconds, c.CPUSeconds)
	set(&t.Limits.MemoryBytes, c.MemoryBytes)
	set(&t.Limits.Processes, c.Processes)
	set(&t.Limits.FileBytes, c.FileBytes)
	set(&t.Limits.OpenFiles, c.OpenFiles)
	t.Context = append(t.Context, c.Context...)
	for _, kv := range c.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, exitcode.Errorf(exitcode.Usage, "--set %q: want NAME=VALUE", kv)
		}
		if t.Env.Set == nil {
			t.Env.Set = map[string]string{}
		}
		t.Env.Set[k] = v
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// policy loads or builds the Policy. --env names are added to the task's
// allow list here, because its default (the policy's list) is known only
// now.
func (c *Cmd) policy(t *execx.Task) (*execx.Policy, error) {
	var p *execx.Policy
	if c.Policy != "" {
		loaded, err := execx.LoadPolicy(c.Policy)
		if err != nil {
			return nil, err
		}
		n := execx.Narrowing{
			Allow:               c.Allow,
			Workspace:           c.Workspace,
			Isolation:           execx.Isolation(c.Isolation),
			IsolationBestEffort: c.IsolationBestEffort,
			Max:                 execx.Limits{Timeout: jsonx.Duration(c.MaxTimeout), OutputBytes: c.MaxOutput},
			Network:             execx.NetworkMode(c.networkMode()),
			AllowHosts:          c.AllowHost,
		}
		if p, err = loaded.Narrow(n); err != nil {
			return nil, err
		}
	} else {
		if c.Manifest != "" && c.Allow == nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--manifest needs --policy or --allow: say which programs may run")
		}
		ws := c.Workspace
		if ws == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, exitcode.Errorf(exitcode.Internal, "workspace: %w", err)
			}
			ws = wd
		}
		abs, err := absPath(ws)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); c.Workspace != "" && (err != nil || !fi.IsDir()) {
			return nil, exitcode.Errorf(exitcode.Usage, "--workspace %s: not a directory", c.Workspace)
		}
		p = &execx.Policy{
			TypeMeta:            jsonx.Meta(execx.KindPolicy),
			Allow:               c.Allow,
			Workspace:           abs,
			Isolation:           execx.Isolation(c.Isolation),
			IsolationBestEffort: c.IsolationBestEffort,
			Max:                 execx.Limits{Timeout: jsonx.Duration(c.MaxTimeout), OutputBytes: c.MaxOutput},
			Network:             execx.NetworkPolicy{Mode: execx.NetworkMode(c.networkMode()), Allow: c.AllowHost},
		}
		if err := c.checkNetwork(); err != nil {
			return nil, err
		}
		if p.Allow == nil {
			p.Allow = []string{}
			if !strings.Contains(t.Program, "/") { // a path stays unlisted: refused (126)
				p.Allow = append(p.Allow, t.Program)
			}
		}
		p.Default()
		// The invoker is the operator: what it asks for with task flags
		// it also allows.
		for _, name := range c.Env {
			if !slices.Contains(p.EnvAllow, name) {
				p.EnvAllow = append(p.EnvAllow, name)
			}
		}
		for name := range t.Env.Set {
			if !slices.Contains(p.EnvAllow, name) {
				p.EnvAllow = append(p.EnvAllow, name)
			}
		}
		raiseCeilings(p, &t.Limits)
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	if len(c.Env) > 0 {
		allow := t.Env.Allow
		if allow == nil {
			allow = slices.Clone(p.EnvAllow)
		}
		for _, name := range c.Env {
			if !slices.Contains(allow, name) {
				allow = append(allow, name)
			}
		}
		t.Env.Allow = allow
	}
	return p, nil
}

// raiseCeilings lifts a built-in ceiling that a flag-built policy's own
// task flags exceed (an explicit --max-* still wins): without --policy
// there is no operator above the invoker.
func raiseCeilings(p *execx.Policy, l *execx.Limits) {
	if p.Max.Timeout == 0 && l.Timeout > execx.BuiltinMax.Timeout {
		p.Max.Timeout = l.Timeout
	}
	if p.Max.KillAfter == 0 && l.KillAfter > execx.BuiltinMax.KillAfter {
		p.Max.KillAfter = l.KillAfter
	}
	if p.Max.Grace == 0 && l.Grace > execx.BuiltinMax.Grace {
		p.Max.Grace = l.Grace
	}
	if p.Max.OutputBytes == 0 && l.OutputBytes > execx.BuiltinMax.OutputBytes {
		p.Max.OutputBytes = min(l.OutputBytes, execx.HardMaxOutputBytes)
	}
	if p.Max.ContextBytes == 0 && l.ContextBytes > execx.BuiltinMax.ContextBytes {
		p.Max.ContextBytes = l.ContextBytes
	}
}

func absPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", exitcode.Errorf(exitcode.Internal, "workspace: %w", err)
	}
	return wd + "/" + p, nil
}

func readManifest(std clibase.IO, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(std.In)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "manifest: stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, exitcode.Errorf(exitcode.NotFound, "manifest %s: no such file", name)
		}
		return nil, exitcode.Errorf(exitcode.Internal, "manifest: %w", err)
	}
	return b, nil
}

// writeResult keeps the Result in path (--result), replaced whole: a
// reader never sees half of one.
func writeResult(path string, res *execx.Result) error {
	b, err := jsonx.MarshalIndent(res)
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(path, b, 0o644); err != nil {
		return exitcode.Errorf(exitcode.Internal, "--result %s: %w", path, err)
	}
	return nil
}

// printResult writes the Result: JSON (indented on a terminal), or with
// -o text only a one-line summary on stderr (the program's output went to
// stdout and stderr as it ran), so stdout is only what the program
// printed. The summary's "exit N" is artexec's own exit code; the
// program's raw status follows in parentheses when it differs.
func printResult(std clibase.IO, json bool, res *execx.Result) error {
	var b []byte
	var err error
	switch {
	case !json:
		_, err = io.WriteString(std.Err, textSummary(res))
		return err
	case std.OutTTY:
		b, err = jsonx.MarshalIndent(res)
	default:
		// jsonx.Marshal's encoding, streamed (the Result can carry its
		// output's whole cap) and written without reflection.
		return res.WriteJSON(std.Out)
	}
	if err != nil {
		return err
	}
	_, err = std.Out.Write(b)
	return err
}

// textSummary is the -o text line: status, artexec's exit code, duration,
// then what the program's own status was when that differs.
func textSummary(res *execx.Result) string {
	var sb strings.Builder
	code := res.CLICode()
	fmt.Fprintf(&sb, "artexec: %s exit %d in %dms", res.Status, code, res.DurationMS)
	var raw []string
	if res.ExitCode != code || res.Signal != "" {
		raw = append(raw, fmt.Sprintf("exit_code %d", res.ExitCode))
	}
	if res.Signal != "" {
		raw = append(raw, res.Signal)
	}
	if res.Killed {
		raw = append(raw, "SIGKILL after --kill-after")
	}
	if len(raw) > 0 {
		fmt.Fprintf(&sb, " (program: %s)", strings.Join(raw, ", "))
	}
	if res.OutputTruncated {
		fmt.Fprintf(&sb, ", output %d bytes (%d omitted)", res.OutputBytes, res.OutputOmitted)
	}
	if res.OutputIncomplete {
		sb.WriteString(", output incomplete")
	}
	sb.WriteByte('\n')
	return sb.String()
}

// networkMode is --network, or allow when only --allow-host was given.
func (c *Cmd) networkMode() string {
	if c.Network == "" && len(c.AllowHost) > 0 {
		return string(execx.NetworkAllow)
	}
	return c.Network
}

// checkNetwork reports a bad --allow-host, or one given with a mode other
// than allow, by its flag.
func (c *Cmd) checkNetwork() error {
	for _, h := range c.AllowHost {
		if err := execx.CheckNetworkRule(h); err != nil { // ErrNoProxy in the artexec binary: Fast declines
			return exitcode.Errorf(exitcode.Usage, "--allow-host: %v", err)
		}
	}
	if len(c.AllowHost) > 0 && c.networkMode() != string(execx.NetworkAllow) {
		return exitcode.Errorf(exitcode.Usage, "--allow-host needs --network allow, not %s", c.Network)
	}
	return nil
}
