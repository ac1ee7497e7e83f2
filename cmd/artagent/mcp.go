package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/agentmetrics"
	"github.com/art-runtime/art/lib/agent/mcpserver"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/words"
)

// McpCmd is `artagent mcp`.
type McpCmd struct {
	Workspace string `name:"workspace" required:"" placeholder:"DIR" help:"The directory the client may read and edit, and where tools run."`
	Task      string `name:"task" placeholder:"TEXT" help:"What the session is for, recorded in the transcript and named in events (optional)."`

	Policy              string   `name:"policy" placeholder:"FILE" help:"An artexec policy document for run_tool (allowlist, path, environment, isolation, ceilings); excludes --allow, --env and --isolation."`
	Allow               []string `name:"allow" placeholder:"NAME" help:"A program run_tool may start, by bare name, looked up in PATH (repeatable). None: run_tool is always refused."`
	Env                 []string `name:"env" placeholder:"NAME" help:"Pass environment variable NAME to tools and verify, beyond PATH HOME USER LANG LC_ALL TZ TMPDIR TERM (repeatable)."`
	Isolation           string   `name:"isolation" enum:"none,landlock,strict,seatbelt" default:"none" placeholder:"none|landlock|strict|seatbelt" help:"Isolation of tools and verify (see artexec)."`
	IsolationBestEffort bool     `name:"isolation-best-effort" help:"Run with what the kernel supports instead of refusing."`
	Network             string   `name:"network" enum:",host,allow,loopback,none" default:"" placeholder:"host|allow|loopback|none" help:"Network of tools and verify (see artexec run --network)."`
	AllowHost           []string `name:"allow-host" placeholder:"HOST[:PORT]" sep:"none" help:"Destination tools may reach through art's proxy (repeatable; implies --network allow; see artexec)."`
	Verify              string   `name:"verify" required:"" placeholder:"'WORDS'" help:"The verification command, run exactly as given (the client cannot change it); it need not be in --allow."`

	MaxSteps         int           `name:"max-steps" default:"30" placeholder:"N" help:"Refuse action calls after N steps (status step_limit); status and resources stay available."`
	Deadline         time.Duration `name:"deadline" placeholder:"D" help:"Refuse action calls after D of wall-clock time (status timeout); a running tool is killed at D."`
	ObservationBytes int           `name:"observation-bytes" default:"16384" placeholder:"N" help:"Cut each observation to N bytes, keeping head and tail."`
	ToolTimeout      time.Duration `name:"tool-timeout" default:"2m" placeholder:"D" help:"Timeout of one run_tool, and the most a client's timeout argument may ask for."`
	VerifyTimeout    time.Duration `name:"verify-timeout" default:"10m" placeholder:"D" help:"Timeout of one verify."`
	MaxFileBytes     int64         `name:"max-file-bytes" default:"1048576" placeholder:"N" help:"Largest file read_file and replace_text accept, before and after an edit."`

	Transcript string `name:"transcript" placeholder:"FILE" help:"Append a record per step to FILE, fsync'd (it must be new or empty); also served as the resource art://transcript."`
	Listen     string `name:"listen" placeholder:"ADDR" help:"Serve streamable HTTP on ADDR (127.0.0.1:PORT, [::1]:PORT, or :PORT for 127.0.0.1) at /mcp instead of stdio. Loopback only: there is no authentication."`
	Metrics    string `name:"metrics" placeholder:"[HOST]:PORT" help:"Serve Prometheus metrics on http://HOST:PORT/metrics for the session (HOST defaults to 127.0.0.1; name another address to expose them)."`
}

// Help implements kong's HelpProvider.
func (c *McpCmd) Help() string {
	return `Serves the Model Context Protocol over stdio (or streamable HTTP with
--listen) so any MCP client drives the same enforcement as 'artagent run':
tools run_tool, read_file, replace_text, verify, status and finish, and
resources art://verify/last and (with --transcript) art://transcript.
Programs go through the runner's allowlist, paths through the confined
editor; an edit opens verification debt, only verify clears it, and finish
is refused while it is open. The debt outlives the session: it is kept
per workspace in a ledger under the state home (--dir, $ART_HOME,
$XDG_STATE_HOME/art or ~/.local/state/art: artagent/ledgers), so a client
that reconnects (each MCP Inspector CLI call is a new session) starts with
the debt the last session left; one session at a time per workspace. A
refusal is a tool result with isError and the reason. Calls run one at a time; a cancelled call kills its tool's
process group. Progress lines go to stderr; stdout is the protocol.

The session ends when the client disconnects (or, with --listen, on
SIGINT/SIGTERM). Exit 0 only after a verified finish, 1 otherwise, 130
when interrupted. --metrics serves Prometheus metrics (steps by action,
refusals, verifications, sessions by status) at /metrics for the
session (docs/observability.md).

Example (an MCP client's server entry runs this):
  artagent mcp --workspace ./calc --allow go --allow cat \
    --verify 'go test ./...' --env GOCACHE --env GOPATH \
    --transcript /tmp/calc-mcp.jsonl

  # the same, with Prometheus metrics on 127.0.0.1:9466:
  artagent mcp --workspace ./calc --allow go --verify 'go test ./...' \
    --metrics :9466`
}

// Run serves until the client leaves or a signal arrives.
func (c *McpCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	addr, err := loopback(c.Listen)
	if err != nil {
		return err
	}
	opt := agent.Options{Progress: std.Err}
	if std.ErrTTY {
		opt.Live = std.Err
	}
	// On stdio, stdout carries the protocol: no events there.
	var eventsOut = std.Out
	if addr == "" {
		eventsOut = nil
		for _, sink := range g.Events {
			if strings.TrimSpace(sink) == "stdout" {
				return exitcode.Errorf(exitcode.Usage, "--events stdout: on stdio, stdout carries the MCP protocol; use jsonl:PATH (or --listen)")
			}
		}
	}
	// A bad or busy --metrics address fails before the session starts.
	count, stopMetrics, err := serveMetrics(std, c.Metrics, agentmetrics.Options{NoProvider: true})
	if err != nil {
		return err
	}
	defer stopMetrics()
	observe, closeEvents := eventObserver(ctx, std, g.Events, eventsOut, runSubject(cfg))
	defer closeEvents()
	opt.Observe = observeAll(observe, count)

	if c.Transcript != "" {
		if err := agent.CheckTranscriptPath(cfg.Workspace, c.Transcript); err != nil {
			return err
		}
		w, cleanup, err := createTranscript(c.Transcript)
		if err != nil {
			return err
		}
		defer cleanup()
		opt.Transcript = w
	}
	ledger, err := openLedger(g, cfg.Workspace)
	if err != nil {
		return err
	}
	defer ledger.Close()
	if ledger != nil {
		opt.Ledger = ledger
	}
	core, err := agent.NewCore(*cfg, opt)
	if err != nil {
		return err
	}
	srv := mcpserver.New(core, mcpserver.Options{Version: cli.Version(), Transcript: c.Transcript})

	var serveErr error
	if addr == "" {
		serveErr = srv.ServeStdio(ctx)
	} else {
		serveErr = serveHTTP(ctx, std, addr, srv)
	}
	// A run not yet ended ends here: as its budget says if one ran out
	// with no call after it, else cancelled (the client left, a signal
	// came, or serving failed).
	status, why := agent.StatusCancelled, errors.New("the client closed the session before a finish")
	if ctx.Err() != nil {
		why = context.Cause(ctx)
	}
	if serveErr != nil {
		why = serveErr
	}
	if st, err := core.Budget(context.Background()); st != "" {
		status, why = st, err
	}
	res, err := core.End(status, why, agent.Failure{})
	if err != nil {
		return err
	}
	switch code := res.ExitCode(); {
	case code == exitcode.OK:
		return nil
	case ctx.Err() == nil && code == exitcode.Cancelled:
		// The client leaving is not an interrupt.
		return exitcode.Quiet(exitcode.Failed)
	default:
		return exitcode.Quiet(code)
	}
}

func (c *McpCmd) config() (*agent.Config, error) {
	verify, err := words.Command(c.Verify)
	if err != nil {
		return nil, fmt.Errorf("--verify: %w", err)
	}
	task := c.Task
	if strings.TrimSpace(task) == "" {
		task = "serve MCP clients"
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
		Deadline:            c.Deadline,
		ToolTimeout:         c.ToolTimeout,
		VerifyTimeout:       c.VerifyTimeout,
		MaxFileBytes:        c.MaxFileBytes,
		Provider:            "mcp",
	}
	if c.Policy != "" {
		if len(c.Allow) > 0 || len(c.Env) > 0 || c.Isolation != string(execx.IsolationNone) || c.IsolationBestEffort || c.Network != "" || len(c.AllowHost) > 0 {
			return nil, exitcode.Errorf(exitcode.Usage, "--policy is the whole run_tool policy: drop --allow, --env, --isolation, --isolation-best-effort, --network and --allow-host")
		}
		p, err := execx.LoadPolicy(c.Policy)
		if err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
		cfg.Policy = p
		cfg.Isolation, cfg.Network = "", execx.NetworkPolicy{}
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// openLedger opens the verification ledger of workspace under the state
// home (--dir, $ART_HOME, $XDG_STATE_HOME/art or ~/.local/state/art), in
// artagent/ledgers.
func openLedger(g *cli.Globals, workspace string) (*agent.Ledger, error) {
	home, err := g.Home()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, nil // the core refuses the workspace, in its words
	}
	return agent.OpenLedger(filepath.Join(home, "artagent", "ledgers"), root)
}

// loopback resolves --listen: "" is stdio, ":PORT" is 127.0.0.1:PORT, and
// any host that is not a loopback IP is refused.
func loopback(listen string) (string, error) {
	if listen == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Usage, "--listen %q: want HOST:PORT (e.g. 127.0.0.1:8765): %v", listen, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", exitcode.Errorf(exitcode.Usage, "--listen %q: not a loopback address: the MCP server has no authentication, so it listens on 127.0.0.1 or ::1 only", listen)
	}
	return net.JoinHostPort(host, port), nil
}

// serveHTTP serves streamable HTTP at /mcp until ctx ends, and says where
// on stderr (with the port chosen when ADDR asked for port 0).
func serveHTTP(ctx context.Context, std cli.IO, addr string, srv *mcpserver.Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--listen: %w", err))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(std.Err, "artagent: serving MCP (streamable HTTP) at http://%s/mcp\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// createTranscript opens the transcript at path for a new run. cleanup
// closes it and, when this run created the file and nothing was written to
// it (the run could not start), removes it: a run that cannot start leaves
// no transcript behind.
func createTranscript(path string) (*transcript.Writer, func(), error) {
	_, statErr := os.Lstat(path)
	w, err := transcript.Create(path)
	if errors.Is(err, transcript.ErrExists) {
		// The library says what is wrong; the way on is this tool's flag.
		return nil, nil, fmt.Errorf("%w (use --resume to continue it)", err)
	}
	if err != nil {
		return nil, nil, err
	}
	created := errors.Is(statErr, os.ErrNotExist)
	return w, func() {
		w.Close()
		if created {
			if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
				os.Remove(path)
			}
		}
	}, nil
}
