package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/agentmetrics"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/agy"
	pexec "github.com/art-runtime/art/lib/agent/provider/exec"
	"github.com/art-runtime/art/lib/agent/provider/mock"
	"github.com/art-runtime/art/lib/agent/provider/openai"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/words"
)

// RunCmd is `artagent run`.
type RunCmd struct {
	Workspace string `name:"workspace" required:"" placeholder:"DIR" help:"The directory the agent may read and edit, and where tools run."`
	Task      string `name:"task" xor:"task" required:"" placeholder:"TEXT" help:"What the agent should do."`
	TaskFile  string `name:"task-file" xor:"task" required:"" placeholder:"F" help:"Read the task from file F."`

	Provider        string        `name:"provider" required:"" enum:"mock,exec,agy,openai" placeholder:"mock|exec|agy|openai" help:"Where decisions come from."`
	MockScript      string        `name:"mock-script" placeholder:"FILE" help:"mock: a JSON Lines script (line N answers step N: a decision, or {\"error\":\"…\"}), or a transcript to replay as a cassette."`
	ProviderCommand string        `name:"provider-command" placeholder:"'WORDS'" help:"exec: the command run per step (Request JSON on stdin, one Decision JSON line on stdout). Split like shell words; no shell runs it."`
	AgyPath         string        `name:"agy-path" default:"agy" placeholder:"P" help:"agy: the agy program (name in PATH, or a path)."`
	BaseURL         string        `name:"base-url" placeholder:"URL" help:"openai: the API root including /v1, e.g. http://127.0.0.1:8080/v1 (llama.cpp) or http://127.0.0.1:11434/v1 (Ollama)."`
	Model           string        `name:"model" placeholder:"M" help:"openai: the model name."`
	APIKeyEnv       string        `name:"api-key-env" placeholder:"VAR" help:"openai: read the API key from environment variable VAR (never logged or recorded)."`
	ProviderEnv     []string      `name:"provider-env" placeholder:"NAME" names:"" help:"exec, agy: pass environment variable NAME to the provider process (repeatable)."`
	ProviderTimeout time.Duration `name:"provider-timeout" default:"5m" placeholder:"D" help:"Wall-clock bound of one provider call."`
	Stream          bool          `name:"stream" help:"agy, openai: stream the model's text to stderr as it arrives."`
	MaxTokens       int           `name:"max-tokens" placeholder:"N" help:"openai: the token limit of one reply, sent as max_tokens (default 2048); a reply cut off at it is a truncated step, told to the model."`
	MaxTokensField  string        `name:"max-tokens-field" enum:"auto,max_tokens,max_completion_tokens" default:"auto" placeholder:"auto|max_tokens|max_completion_tokens" help:"openai: the request field --max-tokens is sent as; auto: max_completion_tokens for api.openai.com, max_tokens elsewhere, switching once if the server's HTTP 400 names the other."`
	ContextTokens   int           `name:"context-tokens" placeholder:"N" help:"openai: the model's context size (default 16384); each request is fitted to it (or to the server's, when smaller) less --max-tokens, estimating 3 bytes per token or fewer as usage shows, the oldest steps collapsed into a summary."`
	ServerContext   bool          `name:"server-context" default:"true" negatable:"" help:"openai: ask the server the context it serves the model with (vLLM /v1/models, llama-server /props, Ollama /api/ps and /api/show) and fit to it when smaller than --context-tokens; --no-server-context fits to --context-tokens alone."`
	ToolCall        bool          `name:"tool-call" help:"openai: send the decision schema as one function tool (tools, tool_choice required) instead of a json_schema response_format."`
	ProviderRetries int           `name:"provider-retries" placeholder:"N" help:"openai: retry a 429, 502, 503 or 504 reply or a refused or reset connection up to N times (default 0), with backoff or the server's Retry-After, inside --provider-timeout; every attempt is recorded."`

	Allow            []string      `name:"allow" placeholder:"NAME" names:"" help:"A program run_tool may start, by bare name, looked up in PATH (repeatable). None: run_tool is always refused."`
	Verify           string        `name:"verify" required:"" placeholder:"'WORDS'" help:"The verification command, run exactly as given (the model cannot change it); it need not be in --allow."`
	MaxSteps         int           `name:"max-steps" default:"30" placeholder:"N" help:"Stop after N steps (status step_limit)."`
	ObservationBytes int           `name:"observation-bytes" default:"16384" placeholder:"N" help:"Cut each observation to N bytes, keeping head and tail."`
	Deadline         time.Duration `name:"deadline" placeholder:"D" help:"Stop after D of wall-clock time (status timeout)."`
	TokenBudget      int64         `name:"token-budget" placeholder:"N" help:"Stop before a provider call once the tokens the provider reported for the whole run reach N (status budget_limit)."`
	MaxFormatErrors  int           `name:"max-format-errors" default:"3" placeholder:"N" help:"Stop after N malformed decisions in a row (status format_error)."`
	ToolTimeout      time.Duration `name:"tool-timeout" default:"2m" placeholder:"D" help:"Timeout of one run_tool."`
	VerifyTimeout    time.Duration `name:"verify-timeout" default:"10m" placeholder:"D" help:"Timeout of one verify."`
	MaxFileBytes     int64         `name:"max-file-bytes" default:"1048576" placeholder:"N" help:"Largest file read_file and replace_text accept, before and after an edit."`

	Transcript string `name:"transcript" placeholder:"FILE" help:"Append a record per step to FILE, fsync'd (it must be new or empty)."`
	Resume     string `name:"resume" placeholder:"FILE" help:"Continue the run recorded in transcript FILE, appending to it."`
	Metrics    string `name:"metrics" placeholder:"[HOST]:PORT" help:"Serve Prometheus metrics on http://HOST:PORT/metrics while running (HOST defaults to 127.0.0.1; name another address to expose them)."`

	Env                 []string `name:"env" placeholder:"NAME" names:"" help:"Pass environment variable NAME to tools and verify, beyond PATH HOME USER LANG LC_ALL TZ TMPDIR TERM (repeatable)."`
	Isolation           string   `name:"isolation" enum:"none,landlock,strict,seatbelt" default:"none" placeholder:"none|landlock|strict|seatbelt" help:"Isolation of tools and verify (see artexec)."`
	IsolationBestEffort bool     `name:"isolation-best-effort" help:"Run with what the kernel supports instead of refusing."`
	Network             string   `name:"network" enum:",host,allow,loopback,none" default:"" placeholder:"host|allow|loopback|none" help:"Network of tools and verify (see artexec run --network)."`
	AllowHost           []string `name:"allow-host" placeholder:"HOST[:PORT]" sep:"none" help:"Destination tools may reach through art's proxy (repeatable; implies --network allow; see artexec)."`
}

// Help implements kong's HelpProvider.
func (c *RunCmd) Help() string {
	return `Each step asks the provider for one decision (run_tool, read_file,
replace_text, verify, finish). Programs go through the runner's allowlist,
paths through the confined editor; an edit opens verification debt, only
verify clears it, and finish is refused while it is open. AgentEvent JSON
Lines go to stdout; progress to stderr on a terminal. Exit 0 only for a
verified finish, 1 for any other ending, 130 when interrupted.

With --events otlphttp://HOST:PORT (or ART_EVENTS) the run is also a trace
sent to that OpenTelemetry collector: an artagent.run span with a child
per step (its provider call, its action or verify), under the caller's
TRACEPARENT when there is one (an artq task's run); the events go as log
records (docs/observability.md). --metrics serves Prometheus metrics
(steps by action, refusals, verifications, provider latency and tokens,
runs by status) at /metrics for as long as the run lasts.

Example:
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider mock --mock-script fix.jsonl \
    --allow go --allow cat --verify 'go test ./...' --env GOCACHE \
    --transcript run.jsonl

  # traced into a collector (Jaeger, the OpenTelemetry Collector):
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider mock --mock-script fix.jsonl --allow go --verify 'go test ./...' \
    --events otlphttp://127.0.0.1:4318

  # with Prometheus metrics on 127.0.0.1:9465 while it runs:
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider mock --mock-script fix.jsonl --allow go --verify 'go test ./...' \
    --metrics :9465

  # against llama-server started with -c 4096:
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider openai --base-url http://127.0.0.1:8080/v1 --model m \
    --context-tokens 4096 --max-tokens 1024 --provider-retries 2 \
    --allow go --verify 'go test ./...' --env GOCACHE

  # against Ollama, its context asked from the server (/api/show, /api/ps):
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider openai --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \
    --max-tokens 1024 --allow go --verify 'go test ./...' --env GOCACHE

  # the same, fitted to --context-tokens alone (no probe):
  artagent run --workspace ./calc --task 'make go test pass' \
    --provider openai --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \
    --context-tokens 4096 --no-server-context --max-tokens 1024 \
    --allow go --verify 'go test ./...' --env GOCACHE`
}

// Run runs the loop.
func (c *RunCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	jsonOut := g.JSON(std)
	var progress io.Writer
	if std.ErrTTY {
		progress = std.Err
	}
	opt := agent.Options{Progress: progress}
	if std.ErrTTY {
		// A long tool or verify shows it is still running.
		opt.Live = std.Err
	}
	if jsonOut {
		opt.Events = std.Out
	} else {
		opt.Progress = std.Out
	}

	// A bad or busy --metrics address fails before the run starts.
	count, stopMetrics, err := serveMetrics(std, c.Metrics, agentmetrics.Options{})
	if err != nil {
		return err
	}
	defer stopMetrics()
	observe, closeEvents := eventObserver(ctx, std, g.Events, std.Out, runSubject(cfg))
	defer closeEvents()
	opt.Observe = observeAll(observe, count)

	p, closeP, err := c.provider(std)
	if err != nil {
		return err
	}
	defer closeP()

	if t := c.Resume + c.Transcript; t != "" {
		if err := agent.CheckTranscriptPath(cfg.Workspace, t); err != nil {
			return err
		}
	}
	switch {
	case c.Resume != "":
		w, recs, dropped, err := transcript.Resume(c.Resume)
		if err != nil {
			return err
		}
		defer w.Close()
		opt.Transcript, opt.Resume = w, &agent.Resume{Records: recs, Dropped: dropped}
	case c.Transcript != "":
		w, cleanup, err := createTranscript(c.Transcript)
		if err != nil {
			return err
		}
		defer cleanup()
		opt.Transcript = w
	}

	res, err := agent.Run(ctx, *cfg, p, opt)
	if err != nil {
		return err
	}
	// A run the provider ended says why on stderr, in one line, even when
	// stderr is not a terminal and the reason is otherwise only in the
	// result event (a terminal already has it in the progress line).
	if res.Err != nil && opt.Progress != std.Err && providerEnded(res.Status, res.Err) {
		fmt.Fprintf(std.Err, "artagent: %s: %s\n", res.Status, strings.Join(strings.Fields(cli.Message(res.Err, budgetFields)), " "))
	}
	if code := res.ExitCode(); code != 0 {
		return exitcode.Quiet(code)
	}
	return nil
}

func (c *RunCmd) config() (*agent.Config, error) {
	task := c.Task
	if c.TaskFile != "" {
		b, err := readBounded(c.TaskFile, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("task-file: %w", err)
		}
		task = string(b)
	}
	verify, err := words.Command(c.Verify)
	if err != nil {
		return nil, fmt.Errorf("--verify: %w", err)
	}
	if c.Transcript != "" && c.Resume != "" && filepath.Clean(c.Transcript) != filepath.Clean(c.Resume) {
		return nil, exitcode.Errorf(exitcode.Usage, "--transcript and --resume name different files: --resume appends to the transcript it continues")
	}
	if c.Transcript != "" && c.Resume != "" {
		c.Transcript = ""
	}
	if err := c.checkProviderFlags(); err != nil {
		return nil, err
	}
	cfg := &agent.Config{
		Task:                task,
		Workspace:           c.Workspace,
		Allow:               c.Allow,
		Verify:              verify,
		Env:                 c.Env,
		Isolation:           execx.Isolation(c.Isolation),
		IsolationBestEffort: c.IsolationBestEffort,
		Network:             agentNetwork(c.Network, c.AllowHost),
		MaxSteps:            c.MaxSteps,
		ObservationBytes:    c.ObservationBytes,
		MaxFormatErrors:     c.MaxFormatErrors,
		Deadline:            c.Deadline,
		MaxTokens:           c.TokenBudget,
		ToolTimeout:         c.ToolTimeout,
		VerifyTimeout:       c.VerifyTimeout,
		MaxFileBytes:        c.MaxFileBytes,
		Provider:            c.Provider,
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkProviderFlags refuses a provider's flags given to another provider
// and a provider without the flags it needs: a typo should not silently
// run a different model.
func (c *RunCmd) checkProviderFlags() error {
	owner := map[string]struct {
		set  bool
		want string
	}{
		"--mock-script":       {c.MockScript != "", "mock"},
		"--provider-command":  {c.ProviderCommand != "", "exec"},
		"--base-url":          {c.BaseURL != "", "openai"},
		"--model":             {c.Model != "", "openai"},
		"--api-key-env":       {c.APIKeyEnv != "", "openai"},
		"--max-tokens":        {c.MaxTokens != 0, "openai"},
		"--max-tokens-field":  {c.MaxTokensField != "auto", "openai"},
		"--context-tokens":    {c.ContextTokens != 0, "openai"},
		"--no-server-context": {!c.ServerContext, "openai"},
		"--tool-call":         {c.ToolCall, "openai"},
		"--provider-retries":  {c.ProviderRetries != 0, "openai"},
	}
	for _, flag := range []string{"--mock-script", "--provider-command", "--base-url", "--model", "--api-key-env", "--max-tokens", "--max-tokens-field", "--context-tokens", "--no-server-context", "--tool-call", "--provider-retries"} {
		o := owner[flag]
		if o.set && o.want != c.Provider {
			return exitcode.Errorf(exitcode.Usage, "%s applies to --provider %s, not %s", flag, o.want, c.Provider)
		}
	}
	if len(c.ProviderEnv) > 0 && c.Provider != "exec" && c.Provider != "agy" {
		return exitcode.Errorf(exitcode.Usage, "--provider-env applies to --provider exec or agy, not %s", c.Provider)
	}
	switch {
	case c.Provider == "mock" && c.MockScript == "":
		return exitcode.Errorf(exitcode.Usage, "--provider mock needs --mock-script FILE")
	case c.Provider == "exec" && c.ProviderCommand == "":
		return exitcode.Errorf(exitcode.Usage, "--provider exec needs --provider-command 'WORDS'")
	case c.Provider == "openai" && (c.BaseURL == "" || c.Model == ""):
		return exitcode.Errorf(exitcode.Usage, "--provider openai needs --base-url URL and --model M")
	}
	return nil
}

// provider builds the chosen provider and what releases it.
func (c *RunCmd) provider(std cli.IO) (provider.Provider, func(), error) {
	none := func() {}
	var streamTo io.Writer
	if c.Stream {
		streamTo = std.Err
	}
	switch c.Provider {
	case "mock":
		if isTranscript(c.MockScript) {
			p, err := mock.Cassette(c.MockScript)
			return p, none, err
		}
		p, err := mock.Load(c.MockScript)
		return p, none, err
	case "exec":
		argv, err := words.Command(c.ProviderCommand)
		if err != nil {
			return nil, none, fmt.Errorf("--provider-command: %w", err)
		}
		p, err := pexec.New(pexec.Config{Argv: argv, Env: c.ProviderEnv, Timeout: c.ProviderTimeout, Log: std.Err})
		return p, none, err
	case "agy":
		p, err := agy.New(agy.Config{Path: c.AgyPath, Env: c.ProviderEnv, Stream: c.Stream, StreamTo: streamTo, Log: std.Err, Timeout: c.ProviderTimeout})
		return p, none, err
	case "openai":
		var key string
		if c.APIKeyEnv != "" {
			key = os.Getenv(c.APIKeyEnv)
			if key == "" {
				return nil, none, exitcode.Errorf(exitcode.Usage, "--api-key-env: %s is not set or empty", c.APIKeyEnv)
			}
		}
		field := c.MaxTokensField
		if field == "auto" {
			field = ""
		}
		p, err := openai.New(openai.Config{
			BaseURL: c.BaseURL, Model: c.Model, APIKey: key, Timeout: c.ProviderTimeout, Stream: c.Stream, StreamTo: streamTo,
			MaxTokens: c.MaxTokens, TokenField: field, ContextTokens: c.ContextTokens, ToolCall: c.ToolCall, Retries: c.ProviderRetries,
			ServerContext: c.ServerContext,
		})
		if err != nil {
			return nil, none, err
		}
		return p, p.Close, nil
	}
	return nil, none, exitcode.Errorf(exitcode.Usage, "unknown provider %q", c.Provider)
}

// isTranscript reports whether the first line of path is a transcript
// record, so --mock-script can take a recorded run as a cassette.
func isTranscript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), transcript.MaxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		return bytes.Contains(line, []byte(`"kind":"`+transcript.Kind+`"`))
	}
	return false
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.Errorf(exitcode.NotFound, "%s: no such file", path)
		}
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, exitcode.Errorf(exitcode.Usage, "%s: larger than %d bytes", path, max)
	}
	return b, nil
}

// runSubject names the run in --events: the same task on the same
// workspace continues the same subject when resumed.
func runSubject(cfg *agent.Config) string {
	abs, _ := filepath.Abs(cfg.Workspace)
	sum := sha256.Sum256([]byte(abs + "\x00" + cfg.Task))
	return "agent/" + hex.EncodeToString(sum[:8])
}

// draft turns an AgentEvent into an obs Draft; redaction happens in obs.
func draft(subject string, ev *agent.Event) obs.Draft {
	attrs := map[string]any{}
	if b, err := jsonx.Marshal(ev); err == nil {
		var m map[string]any
		if jsonx.Unmarshal(b, "event", &m) == nil {
			attrs = m
		}
	}
	delete(attrs, "apiVersion")
	delete(attrs, "kind")
	delete(attrs, "time")
	return obs.Draft{
		TypeMeta: jsonx.Meta(obs.KindDraft),
		Subject:  subject,
		Type:     "agent." + string(ev.Type),
		Time:     ev.Time,
		Role:     obs.RoleRuntime,
		Attrs:    attrs,
	}
}

// providerEnded: the run ended because of its provider: a provider error,
// a refusal, replies cut off at the token limit, or the provider's own
// timeout (not the run's --deadline, which the operator set).
func providerEnded(s agent.Status, err error) bool {
	switch s {
	case agent.StatusProviderError, agent.StatusDenied, agent.StatusTruncated:
		return true
	case agent.StatusTimeout:
		return errors.Is(err, provider.ErrTimeout)
	}
	return false
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
