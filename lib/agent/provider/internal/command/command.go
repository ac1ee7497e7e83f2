// Package command runs a provider's program (exec's command, agy) under
// the runner's bounds: its own process group and per-task supervisor, a
// wall-clock timeout, an output cap and cancellation, with a fresh
// environment. It is shared by the providers that start a process and by
// nothing else.
package command

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/execx"
	_ "github.com/art-runtime/art/lib/execx/netallow" // the provider's policy may name network allow
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Command is a resolved program and the policy it runs under.
type Command struct {
	policy *execx.Policy
	name   string
	args   []string
}

// New resolves argv[0] for running: a bare name is looked up in PATH, a
// name with a slash is taken as a path (relative to the current directory)
// and looked up only in its own directory. The program runs in the current
// directory with execx.DefaultEnvAllow plus env, and no isolation: a
// provider usually needs the network.
func New(argv []string, env []string) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, exitcode.Fieldf(exitcode.Usage, "Command", "", "provider command: empty")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("provider command: %w", err)
	}
	allowEnv := slices.Clone(execx.DefaultEnvAllow)
	for _, n := range env {
		if !slices.Contains(allowEnv, n) {
			allowEnv = append(allowEnv, n)
		}
	}
	p := &execx.Policy{
		TypeMeta:  jsonx.Meta(execx.KindPolicy),
		Workspace: cwd,
		EnvAllow:  allowEnv,
		Isolation: execx.IsolationNone,
	}
	name := argv[0]
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, fmt.Errorf("provider command: %w", err)
		}
		p.Path = []string{filepath.Dir(abs)}
		name = filepath.Base(abs)
	}
	p.Allow = []string{name}
	p.Default()
	if err := p.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("provider command: %w", err))
	}
	return &Command{policy: p, name: name, args: slices.Clone(argv[1:])}, nil
}

// Run runs the command with extra arguments appended, stdin (nil: none),
// and output bounded to maxOutput bytes and copied live to stream (nil:
// not copied). With stderr non-nil the program's standard error is a
// stream of its own, copied to stderr as it arrives (its first maxOutput
// bytes; the Result counts the rest), and the Result's output is standard
// output alone; nil captures both together. A process that could not
// start is an error; a process that started returns its Result whatever
// happened to it.
func (c *Command) Run(ctx context.Context, extra []string, stdin io.Reader, timeout time.Duration, maxOutput int64, stream, stderr io.Writer) (*execx.Result, error) {
	t := execx.NewTask(c.name, append(slices.Clone(c.args), extra...)...)
	t.Limits.Timeout = jsonx.Duration(timeout)
	t.Limits.OutputBytes = maxOutput
	t.Limits.KillAfter = jsonx.Duration(2 * time.Second)
	t.Limits.Grace = jsonx.Duration(time.Second)
	return execx.Run(ctx, c.policy, t, execx.Options{Supervised: true, Stdin: stdin, Stream: stream, Stderr: stderr, StderrBytes: maxOutput})
}

// Check turns a finished run into the provider error it means, or nil for
// a clean exit 0: timed out is provider.ErrTimeout, cancelled is the
// caller's cause, anything else names the exit and the program's last
// word: the last line of its own stderr (stderr, the Log it was run with),
// else the last line of its output.
func Check(ctx context.Context, name string, res *execx.Result, timeout time.Duration, stderr *Log) error {
	switch {
	case res.Cancelled && ctx.Err() != nil:
		return &provider.Error{Provider: name, Err: context.Cause(ctx)}
	case res.TimedOut:
		return provider.Errorf(name, "%w after %v (process group killed)", provider.ErrTimeout, timeout)
	case res.Status != execx.StatusSucceeded:
		how := fmt.Sprintf("exit %d", res.ExitCode)
		if res.Signal != "" {
			how = "killed by " + res.Signal
		}
		l := stderr.Last()
		if l == "" {
			l = LastLine(res.Output)
		}
		if l != "" {
			return provider.Errorf(name, "%s: %s", how, l)
		}
		return provider.Errorf(name, "%s", how)
	}
	return nil
}

// LastLine is the last non-blank line of s, shortened to one line of at
// most 300 bytes.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

// maxLogLine is where a line without a newline is cut and forwarded in
// pieces: a longer one is not a log line worth holding whole.
const maxLogLine = 64 << 10

// Log is a program's own standard error as a provider shows it: each line
// forwarded to w as "NAME: line" as soon as it is complete (blank lines
// dropped, a partial last line at Close), each seen by onLine, and the
// last non-blank line kept for Check. Run's stderr argument.
type Log struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer         // nil: lines are only seen and kept
	onLine func(line string) // nil: none
	buf    []byte
	last   string
}

// NewLog returns a Log prefixing lines with name; w and onLine may be nil.
func NewLog(name string, w io.Writer, onLine func(line string)) *Log {
	return &Log{prefix: name + ": ", w: w, onLine: onLine}
}

// Write never fails: a failing w loses lines, not the run.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxLogLine {
				l.line(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.line(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// Close forwards a last line left without its newline and, if the runner
// dropped part of the stream (res.StderrDropped), says how much.
func (l *Log) Close(res *execx.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(l.buf)
		l.buf = nil
	}
	if res != nil && res.StderrDropped > 0 && l.w != nil {
		fmt.Fprintf(l.w, "%s[%d more bytes of standard error not shown]\n", l.prefix, res.StderrDropped)
	}
}

// Last is the last non-blank line seen, trimmed to one line of at most
// 300 bytes; "" for a nil Log.
func (l *Log) Last() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *Log) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	s := string(b)
	l.last = LastLine(s)
	if l.onLine != nil {
		l.onLine(s)
	}
	if l.w != nil {
		_, _ = io.WriteString(l.w, l.prefix+s+"\n")
	}
}
