// Package exec is the provider that runs any operator-configured command
// per step: the Request document as one JSON line on its standard input,
// the Decision as one JSON line on its standard output, and anything else
// it prints taken as logs. The command runs under the runner's bounds (its
// own process group and supervisor, a wall-clock timeout, an output cap,
// cancellation) with a fresh environment.
//
// The runner captures stdout and stderr as one stream, so the decision is
// the last line of output that is a JSON object; a command must print its
// decision as a single line and must not end its output with a log line
// that is itself a JSON object. Its other lines are forwarded as logs.
// A non-zero exit is a provider error.
package exec

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/internal/command"
	"github.com/art-runtime/art/lib/jsonx"
)

// Name is the provider's name in errors.
const Name = "exec"

// Defaults.
const (
	DefaultTimeout       = 5 * time.Minute
	DefaultMaxReplyBytes = 4 << 20
)

// Config configures the provider.
type Config struct {
	// Argv is the command: program (a name looked up in PATH, or a path)
	// and arguments, split from --provider-command by lib/words.
	Argv []string
	// Env names variables passed to the command beyond
	// execx.DefaultEnvAllow (an API key, say).
	Env []string
	// Timeout bounds one call (default 5m).
	Timeout time.Duration
	// MaxReplyBytes caps the command's whole output (default 4 MiB).
	MaxReplyBytes int64
	// Log receives the command's non-decision output lines as they arrive
	// (nil: dropped).
	Log io.Writer
}

// Provider runs the command once per step.
type Provider struct {
	cfg Config
	cmd *command.Command
}

// New resolves the command.
func New(cfg Config) (*Provider, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	c, err := command.New(cfg.Argv, cfg.Env)
	if err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, cmd: c}, nil
}

// Decide runs the command with req on stdin.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	in, err := jsonx.Marshal(req)
	if err != nil {
		return nil, provider.Errorf(Name, "encode request: %w", err)
	}
	var logw io.Writer
	if p.cfg.Log != nil {
		logw = &logLines{w: p.cfg.Log}
	}
	start := time.Now()
	res, err := p.cmd.Run(ctx, nil, bytes.NewReader(append(in, '\n')), p.cfg.Timeout, p.cfg.MaxReplyBytes, logw)
	if err != nil {
		return nil, &provider.Error{Provider: Name, Err: err}
	}
	if lw, ok := logw.(*logLines); ok {
		lw.flush()
	}
	if err := command.Check(ctx, Name, res, p.cfg.Timeout); err != nil {
		return nil, err
	}
	if res.OutputTruncated {
		return nil, provider.Errorf(Name, "%w: the command wrote %d bytes, limit %d", provider.ErrTooLarge, res.OutputBytes, p.cfg.MaxReplyBytes)
	}
	text, ok := decisionLine(res.Output)
	if !ok {
		return nil, provider.Errorf(Name, "%w: no JSON object line on standard output (last line: %q)", provider.ErrProtocol, command.LastLine(res.Output))
	}
	return &provider.Reply{Text: text, Latency: time.Since(start)}, nil
}

// decisionLine is the last line of out that is a JSON object.
func decisionLine(out string) (string, bool) {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "{") && gjson.Valid(l) {
			return l, true
		}
	}
	return "", false
}

// logLines forwards complete output lines that are not JSON objects.
type logLines struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > 64<<10 { // a line this long is not a log line worth keeping whole
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *logLines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *logLines) emit(line []byte) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || (t[0] == '{' && gjson.ValidBytes(t)) {
		return
	}
	_, _ = l.w.Write(append(append([]byte(Name+": "), line...), '\n'))
}
