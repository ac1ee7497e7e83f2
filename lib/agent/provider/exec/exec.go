// Package exec is the provider that runs any operator-configured command
// per step: the Request document as one JSON line on its standard input,
// the Decision on its standard output, and its standard error as logs. The
// command runs under the runner's bounds (its own process group and
// supervisor, a wall-clock timeout, an output cap, cancellation) with a
// fresh environment.
//
// The runner keeps the two streams apart, so nothing is guessed: the reply
// is the whole of standard output, trimmed, and must be exactly one JSON
// object (on one line or many). Anything else — nothing, prose, two
// objects — is still returned as the reply, and the loop's strict decoder
// treats it as any malformed reply: it goes back to the model as an
// observation. Standard error is forwarded line by line to Config.Log as
// "exec: line", JSON-looking or not. A non-zero exit is a provider error
// naming the exit and the last line of standard error; standard output
// over the cap is provider.ErrTooLarge.
package exec

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

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
	// MaxReplyBytes caps the command's standard output, the reply (more
	// is provider.ErrTooLarge), and separately how much of its standard
	// error reaches Log (default 4 MiB).
	MaxReplyBytes int64
	// Log receives the command's standard error, each line prefixed
	// "exec: ", as it arrives (nil: dropped).
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

// Decide runs the command with req on stdin; the reply is its standard
// output.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	in, err := jsonx.Marshal(req)
	if err != nil {
		return nil, provider.Errorf(Name, "encode request: %w", err)
	}
	log := command.NewLog(Name, p.cfg.Log, nil)
	start := time.Now()
	res, err := p.cmd.Run(ctx, nil, bytes.NewReader(append(in, '\n')), p.cfg.Timeout, p.cfg.MaxReplyBytes, nil, log)
	if err != nil {
		return nil, &provider.Error{Provider: Name, Err: err}
	}
	log.Close(res)
	if err := command.Check(ctx, Name, res, p.cfg.Timeout, log); err != nil {
		return nil, err
	}
	if res.OutputTruncated {
		return nil, provider.Errorf(Name, "%w: the command wrote %d bytes to standard output, limit %d", provider.ErrTooLarge, res.OutputBytes, p.cfg.MaxReplyBytes)
	}
	return &provider.Reply{Text: strings.TrimSpace(res.Output), Latency: time.Since(start)}, nil
}
