// Package mcpserver serves an agent.Core to Model Context Protocol clients:
// the client proposes, the core disposes. Every action tool call is one
// step of the core, so a client gets exactly what artagent's own loop
// enforces: programs through the runner's allowlist and bounds, paths
// through the confined editor, verification debt opened by every edit and
// cleared only by the operator's verify, finish refused while it is open,
// and the same transcript records, events and budgets.
//
// A refusal is a tool result with isError set and the reason as its text,
// never a protocol error, so a model sees why and can correct itself. No
// argument widens anything: run_tool's cwd is confined by the runner and
// its timeout may only shorten the operator's. Calls are taken one at a
// time in arrival order; a call waiting for its turn, or running, ends
// when its client cancels it (the running tool's process group is killed).
//
// The protocol layer is the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/words"
	"github.com/art-runtime/art/lib/workspace"
)

// Tool names, in the order tools/list shows them.
const (
	ToolRunTool     = "run_tool"
	ToolReadFile    = "read_file"
	ToolReplaceText = "replace_text"
	ToolVerify      = "verify"
	ToolStatus      = "status"
	ToolFinish      = "finish"
)

// Tools lists every tool, for tests and docs.
var Tools = []string{ToolRunTool, ToolReadFile, ToolReplaceText, ToolVerify, ToolStatus, ToolFinish}

// Resource URIs.
const (
	ResourceTranscript = "art://transcript"
	ResourceLastVerify = "art://verify/last"
)

// MaxResourceBytes bounds what the transcript resource returns: its tail,
// when the file is longer.
const MaxResourceBytes = 8 << 20

// Options configure the server.
type Options struct {
	// Version is reported to clients as the server's version.
	Version string
	// Transcript is the path of the core's transcript, served as a
	// resource ("" serves none).
	Transcript string
	// ProgressInterval is how often a call that asked for progress (a
	// progress token) hears that its tool or verify is still running
	// (default 1s).
	ProgressInterval time.Duration
}

// Server is one core behind one MCP server.
type Server struct {
	core       *agent.Core
	srv        *mcp.Server
	transcript string
	every      time.Duration
}

// RunToolInput is run_tool's arguments.
type RunToolInput struct {
	Program string   `json:"program" jsonschema:"a program the operator allowed, by bare name (looked up in the operator's PATH)"`
	Args    []string `json:"args" jsonschema:"its arguments, passed as given: no shell runs them"`
	Cwd     string   `json:"cwd,omitempty" jsonschema:"working directory relative to the workspace (default: its root); it cannot leave the workspace"`
	Timeout float64  `json:"timeout,omitempty" jsonschema:"seconds before the process group is killed; at most the operator's tool timeout, which is also the default"`
}

// ReadFileInput is read_file's arguments.
type ReadFileInput struct {
	Path string `json:"path" jsonschema:"a plain relative path inside the workspace"`
}

// ReplaceTextInput is replace_text's arguments.
type ReplaceTextInput struct {
	Path string `json:"path" jsonschema:"a plain relative path of an existing file inside the workspace"`
	Old  string `json:"old" jsonschema:"the exact text to replace: non-empty and occurring exactly once in the file"`
	New  string `json:"new" jsonschema:"the replacement text (may be empty)"`
}

// FinishInput is finish's arguments.
type FinishInput struct {
	Summary string `json:"summary" jsonschema:"what was done"`
}

// Empty is the arguments of verify and status.
type Empty struct{}

// Edit is an applied replacement.
type Edit = workspace.Edit

// StepOutput is the structured result of every action tool: the step the
// call became (its observation is also the text content) and the state
// after it.
type StepOutput struct {
	// Step is the step number, 0 when the call was refused before it
	// became a step (the run had ended, or a budget ran out).
	Step int `json:"step"`
	// Outcome: observation, rejected, verify, finished, or ended (the run
	// had already ended: see Status).
	Outcome     string `json:"outcome" jsonschema:"observation, rejected, verify, finished, or ended"`
	Refusal     string `json:"refusal,omitempty" jsonschema:"why a rejected call was refused: format, program, path, file, match, changed, debt or invalid"`
	Observation string `json:"observation" jsonschema:"what the call produced, cut head-and-tail to the operator's bound"`
	Elided      int64  `json:"elided,omitempty" jsonschema:"bytes cut from the observation"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Passed      *bool  `json:"passed,omitempty" jsonschema:"verify: whether the operator's command passed"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	Cancelled   bool   `json:"cancelled,omitempty"`
	Edit        *Edit  `json:"edit,omitempty"`
	Debt        bool   `json:"debt" jsonschema:"verification debt is open: an edit is not covered by a passing verify"`
	Verified    bool   `json:"verified"`
	Edits       int    `json:"edits"`
	Steps       int    `json:"steps"`
	MaxSteps    int    `json:"max_steps"`
	// Status is the run's status once it ended.
	Status string `json:"status,omitempty" jsonschema:"the run's status once it ended: finished, step_limit, timeout, cancelled"`
}

// StatusOutput is status's result.
type StatusOutput struct {
	Steps    int      `json:"steps"`
	MaxSteps int      `json:"max_steps"`
	Edits    int      `json:"edits"`
	Debt     bool     `json:"debt" jsonschema:"verification debt is open: finish is refused until verify passes"`
	Verified bool     `json:"verified"`
	Allow    []string `json:"allow" jsonschema:"the programs run_tool may start"`
	Verify   string   `json:"verify" jsonschema:"the operator's verification command"`
	// LastVerify is the latest verify, absent before any.
	LastVerify *LastVerify `json:"last_verify,omitempty"`
	// Status is the run's status once it ended.
	Status string `json:"status,omitempty"`
	// DeadlineSeconds is the wall-clock budget left, when there is one.
	DeadlineSeconds *float64 `json:"deadline_seconds,omitempty"`
}

// LastVerify summarises the latest verify (its output is the
// art://verify/last resource).
type LastVerify struct {
	Step      int  `json:"step"`
	Passed    bool `json:"passed"`
	ExitCode  *int `json:"exit_code,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
}

// New builds the server and registers its tools and resources.
func New(core *agent.Core, opt Options) *Server {
	s := &Server{core: core, transcript: opt.Transcript, every: opt.ProgressInterval}
	if s.every <= 0 {
		s.every = time.Second
	}
	cfg := core.Config()
	version := opt.Version
	if version == "" {
		version = "dev"
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "artagent", Title: "art: bounded runner, confined editor, verification gate", Version: version},
		&mcp.ServerOptions{Instructions: instructions(&cfg), Capabilities: &mcp.ServerCapabilities{}})

	allowed := "none: every run_tool is refused"
	if len(cfg.Allow) > 0 {
		allowed = strings.Join(cfg.Allow, ", ")
	}
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[RunToolInput](), OutputSchema: schemaFor[StepOutput](), Name: ToolRunTool, Title: "Run an allowed program",
		Description: "Run one allowed program in the workspace under the operator's policy (allowlist, confinement, timeout, capped output). Allowed: " + allowed + ". Returns the output (head and tail) and exit code. Counts as a step."},
		s.runTool)
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[ReadFileInput](), OutputSchema: schemaFor[StepOutput](), Name: ToolReadFile, Title: "Read a workspace file",
		Description: "Read a regular file inside the workspace by plain relative path. Counts as a step.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.readFile)
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[ReplaceTextInput](), OutputSchema: schemaFor[StepOutput](), Name: ToolReplaceText, Title: "Replace text exactly once",
		Description: "Replace the one occurrence of old with new in an existing workspace file (written atomically, mode kept). Refused when old is empty, absent or not unique. A successful edit opens verification debt. Counts as a step."},
		s.replaceText)
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[Empty](), OutputSchema: schemaFor[StepOutput](), Name: ToolVerify, Title: "Run the operator's verification",
		Description: "Run the operator's verification command exactly as configured (" + words.Quote(cfg.Verify) + "). Passing (exit 0) clears verification debt; failing keeps it open. Counts as a step."},
		s.verify)
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[Empty](), OutputSchema: schemaFor[StatusOutput](), Name: ToolStatus, Title: "Show the session's state",
		Description: "Steps used and allowed, edits, whether verification debt is open, the last verify result. Not a step.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.status)
	mcp.AddTool(s.srv, &mcp.Tool{InputSchema: schemaFor[FinishInput](), OutputSchema: schemaFor[StepOutput](), Name: ToolFinish, Title: "Finish the work",
		Description: "Finish with a summary. Refused while verification debt is open (run verify first). An accepted finish ends the session's work: later action calls are refused."},
		s.finish)

	s.srv.AddResource(&mcp.Resource{URI: ResourceLastVerify, Name: "last-verify", Title: "Last verify output",
		Description: "The observation of the latest verify: the command, its output (head and tail), how it ended.", MIMEType: "text/plain"},
		s.readLastVerify)
	if s.transcript != "" {
		s.srv.AddResource(&mcp.Resource{URI: ResourceTranscript, Name: "transcript", Title: "Transcript",
			Description: "The session's transcript: versioned JSON Lines, one record per step, fsync'd.", MIMEType: "application/jsonl"},
			s.readTranscript)
	}
	return s
}

func instructions(cfg *agent.Config) string {
	return fmt.Sprintf("You act on the workspace only through these tools. Read files with read_file, edit with replace_text (exact, unique old text), "+
		"run allowed programs with run_tool, then run verify (%s): finish is refused while an edit is not covered by a passing verify. "+
		"At most %d steps.", words.Quote(cfg.Verify), cfg.MaxSteps)
}

// MCP is the underlying SDK server, to connect to any transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// ServeStdio serves one client over standard input and output until it
// disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Serve(ctx, &mcp.StdioTransport{})
}

// Serve serves one client over t until it disconnects or ctx ends. A
// client that went away is a clean end however the transport learns it:
// EOF on a read, or a closed pipe (EPIPE on stdio) when a late reply — to
// a call the client cancelled as it left — is written first.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	err := s.srv.Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// Handler serves MCP's streamable HTTP transport; every session drives the
// same core. The SDK refuses requests whose Host is not loopback when they
// arrive on a loopback address (DNS rebinding).
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
}

func (s *Server) runTool(ctx context.Context, req *mcp.CallToolRequest, in RunToolInput) (*mcp.CallToolResult, StepOutput, error) {
	d := &provider.Decision{Action: provider.ActionRunTool, Program: in.Program, Args: in.Args}
	m := agent.Move{Dir: in.Cwd}
	if in.Timeout != 0 {
		if in.Timeout < 0 || math.IsNaN(in.Timeout) || in.Timeout > float64(math.MaxInt64/int64(time.Second)) {
			return s.refuse(fmt.Sprintf("run_tool: timeout %v: must be a positive number of seconds", in.Timeout), "invalid")
		}
		m.Timeout = time.Duration(in.Timeout * float64(time.Second))
		if m.Timeout <= 0 {
			m.Timeout = time.Nanosecond
		}
	}
	return s.step(ctx, req, d, m)
}

func (s *Server) readFile(ctx context.Context, req *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, StepOutput, error) {
	return s.step(ctx, req, &provider.Decision{Action: provider.ActionReadFile, Path: in.Path}, agent.Move{})
}

func (s *Server) replaceText(ctx context.Context, req *mcp.CallToolRequest, in ReplaceTextInput) (*mcp.CallToolResult, StepOutput, error) {
	n := in.New
	return s.step(ctx, req, &provider.Decision{Action: provider.ActionReplaceText, Path: in.Path, Old: in.Old, New: &n}, agent.Move{})
}

func (s *Server) verify(ctx context.Context, req *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, StepOutput, error) {
	return s.step(ctx, req, &provider.Decision{Action: provider.ActionVerify}, agent.Move{})
}

func (s *Server) finish(ctx context.Context, req *mcp.CallToolRequest, in FinishInput) (*mcp.CallToolResult, StepOutput, error) {
	return s.step(ctx, req, &provider.Decision{Action: provider.ActionFinish, Summary: in.Summary}, agent.Move{})
}

// step hands one call to the core. The decision goes through the same
// strict decoder as a model's reply (so a client and a model are refused
// alike); the recorded reply is the client's call as it arrived.
func (s *Server) step(ctx context.Context, req *mcp.CallToolRequest, d *provider.Decision, m agent.Move) (*mcp.CallToolResult, StepOutput, error) {
	raw, err := json.Marshal(struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}{req.Params.Name, req.Params.Arguments})
	if err != nil {
		return nil, StepOutput{}, err
	}
	m.Reply = string(raw)
	canon, err := json.Marshal(d)
	if err != nil {
		return nil, StepOutput{}, err
	}
	if m.Decision, err = provider.DecodeDecision(canon); err != nil {
		// Not a step: the SDK already checked the schema, so this is a
		// value the schema admits and the decoder does not (an empty
		// program name).
		return s.refuse(strings.Replace(err.Error(), "decision.", string(d.Action)+".", 1), string(agent.RefusalFormat))
	}
	stop := s.progress(ctx, req, d)
	out, res, err := s.core.Call(ctx, m)
	stop()
	switch {
	case errors.Is(err, agent.ErrEnded):
		return s.refuse(fmt.Sprintf("%s refused: the session's run has ended (%s); only status and the resources remain", d.Action, res.Status), "")
	case err != nil && ctx.Err() != nil:
		return s.refuse(fmt.Sprintf("%s cancelled before it ran: %v", d.Action, context.Cause(ctx)), "")
	case err != nil:
		// The transcript could not be written: the core cannot go on
		// recording, which the client must hear as a failure.
		return nil, StepOutput{}, err
	case out == nil:
		o := s.output(nil)
		o.Outcome = "ended"
		text := fmt.Sprintf("%s refused: the run ended: %s", d.Action, res.Status)
		if res.Err != nil {
			text += ": " + res.Err.Error()
		}
		o.Observation = text
		return errorResult(text), o, nil
	}
	o := s.output(out)
	text := out.Observation
	if out.Kind == agent.OutcomeFinished {
		text = "finished: " + d.Summary
		if !o.Verified {
			text += " (no edit and no passing verify: nothing was verified)"
		}
		o.Observation = text
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	// A refusal is an error result with the reason: never a protocol
	// error. A program that ran and exited non-zero, or a verify that ran
	// and failed, is not a refusal: its exit_code and passed say so.
	r.IsError = out.Kind == agent.EventRejected
	return r, o, nil
}

// progress tells a client that asked (with a progress token) that its
// run_tool or verify is still going, once per interval: "run_tool: 12s",
// progress counting seconds. It returns what stops it.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, d *provider.Decision) func() {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil || (d.Action != provider.ActionRunTool && d.Action != provider.ActionVerify) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				secs := now.Sub(start).Seconds()
				// Best effort: a client that stopped listening does not
				// stop the tool.
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: secs,
					Message: fmt.Sprintf("%s: running… %ds", d.Action, int(secs+0.5))})
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

func (s *Server) refuse(text, refusal string) (*mcp.CallToolResult, StepOutput, error) {
	o := s.output(nil)
	o.Outcome, o.Refusal, o.Observation = string(agent.EventRejected), refusal, text
	return errorResult(text), o, nil
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) output(out *agent.Outcome) StepOutput {
	snap := s.core.Snapshot()
	o := StepOutput{Debt: snap.Debt, Verified: snap.Verified, Edits: snap.Edits, Steps: snap.Steps, MaxSteps: snap.MaxSteps}
	if snap.Ended != nil {
		o.Status = string(snap.Ended.Status)
	}
	if out == nil {
		return o
	}
	o.Step, o.Outcome, o.Refusal = out.Step, string(out.Kind), string(out.Refusal)
	o.Observation, o.Elided, o.ExitCode, o.Passed = out.Observation, out.Elided, out.ExitCode, out.Passed
	o.TimedOut, o.Cancelled, o.Edit = out.TimedOut, out.Cancelled, out.Edit
	return o
}

func (s *Server) status(_ context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, StatusOutput, error) {
	snap := s.core.Snapshot()
	cfg := s.core.Config()
	o := StatusOutput{Steps: snap.Steps, MaxSteps: snap.MaxSteps, Edits: snap.Edits, Debt: snap.Debt, Verified: snap.Verified,
		Allow: append([]string{}, cfg.Allow...), Verify: words.Quote(cfg.Verify)}
	if v := snap.LastVerify; v != nil {
		o.LastVerify = &LastVerify{Step: v.Step, Passed: v.Passed != nil && *v.Passed, ExitCode: v.ExitCode, Cancelled: v.Cancelled}
	}
	if snap.Ended != nil {
		o.Status = string(snap.Ended.Status)
	}
	if !snap.Deadline.IsZero() {
		left := max(time.Until(snap.Deadline).Seconds(), 0)
		o.DeadlineSeconds = &left
	}
	debt := "no verification debt"
	if o.Debt {
		debt = "verification debt OPEN: run verify before finish"
	}
	text := fmt.Sprintf("%d of %d steps, %d edits, %s", o.Steps, o.MaxSteps, o.Edits, debt)
	if o.LastVerify != nil {
		text += fmt.Sprintf("; last verify at step %d: passed=%t", o.LastVerify.Step, o.LastVerify.Passed)
	}
	if o.Status != "" {
		text += "; run ended: " + o.Status
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, o, nil
}

func (s *Server) readLastVerify(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	text := "no verify has run yet"
	if v := s.core.Snapshot().LastVerify; v != nil {
		text = v.Observation
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

func (s *Server) readTranscript(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	text, err := tail(s.transcript, MaxResourceBytes)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/jsonl", Text: text}}}, nil
}

// tail reads at most max bytes from the end of path, starting at a line.
func tail(path string, max int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := int64(0)
	if fi.Size() > max {
		off = fi.Size() - max
	}
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if off > 0 {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b), nil
}
