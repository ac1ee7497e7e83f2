// Package agy is the provider for Google's Antigravity CLI in headless
// mode: `agy -p PROMPT --output-format json|stream-json [--mode plan]
// [--sandbox] [--json-schema S] [--print-timeout D]`, run per step under
// the runner's bounds (process group, wall-clock timeout, output cap,
// cancellation). The CLI's own --print-timeout is a secondary bound set
// below ours, never the only one.
//
// It parses only agy's structured output, on its standard output, and does
// not trust its status: a print timeout still reports SUCCESS with partial
// text and zero usage (its standard error says "print timeout"), and
// auto-denied actions report SUCCESS with an empty response and
// denied_actions; the first is classified as a timeout, the second as
// denied. The runner keeps agy's standard error apart: it is forwarded to
// Config.Log line by line as "agy: line" as it arrives, and it is the only
// place "print timeout" is looked for, so a response that happens to
// contain the words cannot trip it. Flags differ between versions, so `agy
// --help` is probed once and optional flags are passed only when listed.
// Plan and sandbox mode are not a security boundary: the loop's allowlist
// and editor are, and a decision from agy is only a request to them.
package agy

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/internal/command"
)

// Name is the provider's name in errors.
const Name = "agy"

// Defaults.
const (
	DefaultTimeout       = 5 * time.Minute
	DefaultMaxReplyBytes = 4 << 20
	// DefaultMaxPromptBytes keeps -p PROMPT under Linux's 128 KiB limit
	// on one argument (MAX_ARG_STRLEN).
	DefaultMaxPromptBytes = 96 << 10
	probeTimeout          = 15 * time.Second
)

// Config configures the provider.
type Config struct {
	// Path is the agy program: a name looked up in PATH, or a path
	// (default "agy").
	Path string
	// Env names variables agy receives beyond execx.DefaultEnvAllow (its
	// credentials, say).
	Env []string
	// Stream selects --output-format stream-json: text deltas are written
	// to StreamTo as they arrive.
	Stream   bool
	StreamTo io.Writer
	// Log receives agy's standard error as it arrives, and any line of its
	// standard output that is not part of its JSON, each prefixed "agy: ".
	Log            io.Writer
	Timeout        time.Duration
	MaxReplyBytes  int64
	MaxPromptBytes int
}

// Features are the flags a probed agy lists in its help.
type Features struct {
	OutputFormat, StreamJSON, Mode, Sandbox, JSONSchema, PrintTimeout bool
}

// Provider runs agy once per step.
type Provider struct {
	cfg Config
	cmd *command.Command

	once     sync.Once
	features Features
	probeErr error
}

// New resolves the agy program; the flag probe runs on the first Decide.
func New(cfg Config) (*Provider, error) {
	if cfg.Path == "" {
		cfg.Path = "agy"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if cfg.MaxPromptBytes <= 0 {
		cfg.MaxPromptBytes = DefaultMaxPromptBytes
	}
	c, err := command.New([]string{cfg.Path}, cfg.Env)
	if err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, cmd: c}, nil
}

var flagRE = regexp.MustCompile(`(?m)(^|[\s,\[])(--[a-z][a-z-]*)`)

// Probe runs `agy --help` once and records which flags it lists. A help
// text without --output-format is refused: structured output is the only
// output this adapter reads.
func (p *Provider) Probe(ctx context.Context) (Features, error) {
	p.once.Do(func() {
		// One stream: a help text may be printed on either.
		res, err := p.cmd.Run(ctx, []string{"--help"}, nil, probeTimeout, 256<<10, nil, nil)
		if err != nil {
			p.probeErr = &provider.Error{Provider: Name, Err: err}
			return
		}
		if res.TimedOut || res.Cancelled {
			p.probeErr = command.Check(ctx, Name+" --help", res, probeTimeout, nil)
			return
		}
		flags := map[string]bool{}
		for _, m := range flagRE.FindAllStringSubmatch(res.Output, -1) {
			flags[m[2]] = true
		}
		f := Features{
			OutputFormat: flags["--output-format"],
			StreamJSON:   strings.Contains(res.Output, "stream-json"),
			Mode:         flags["--mode"],
			Sandbox:      flags["--sandbox"],
			JSONSchema:   flags["--json-schema"],
			PrintTimeout: flags["--print-timeout"],
		}
		if !f.OutputFormat {
			p.probeErr = provider.Errorf(Name, "%s --help lists no --output-format: this agy cannot give structured output", p.cfg.Path)
			return
		}
		p.features = f
	})
	return p.features, p.probeErr
}

// Args is the argument list for one call.
func (p *Provider) Args(f Features, prompt string) []string {
	format := "json"
	if p.cfg.Stream && f.StreamJSON {
		format = "stream-json"
	}
	args := []string{"-p", prompt, "--output-format", format}
	if f.Mode {
		args = append(args, "--mode", "plan")
	}
	if f.Sandbox {
		args = append(args, "--sandbox")
	}
	if f.JSONSchema {
		args = append(args, "--json-schema", provider.DecisionSchema)
	}
	if f.PrintTimeout {
		secs := int64(p.cfg.Timeout*9/10) / int64(time.Second)
		if secs < 1 {
			secs = 1
		}
		args = append(args, "--print-timeout", fmt.Sprintf("%ds", secs))
	}
	return args
}

// Decide asks agy for the next decision.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	f, err := p.Probe(ctx)
	if err != nil {
		return nil, err
	}
	prompt := provider.Prompt(req, p.cfg.MaxPromptBytes)
	args := p.Args(f, prompt)
	stream := args[3] == "stream-json"
	// In stream mode standard output is parsed as it arrives; in json
	// mode the document may span lines, so it is parsed once the run is
	// over. Standard error is only logs, watched for the print timeout.
	var sp *streamParser
	var live io.Writer
	if stream {
		sp = &streamParser{log: p.cfg.Log, deltas: p.cfg.StreamTo, max: p.cfg.MaxReplyBytes}
		live = sp
	}
	var printTimeout atomic.Bool
	log := command.NewLog(Name, p.cfg.Log, func(line string) {
		if strings.Contains(strings.ToLower(line), "print timeout") {
			printTimeout.Store(true)
		}
	})
	start := time.Now()
	res, err := p.cmd.Run(ctx, args, nil, p.cfg.Timeout, p.cfg.MaxReplyBytes, live, log)
	if err != nil {
		return nil, &provider.Error{Provider: Name, Err: err}
	}
	log.Close(res)
	if sp != nil {
		sp.flush()
	}
	if res.TimedOut || (res.Cancelled && ctx.Err() != nil) {
		return nil, command.Check(ctx, Name, res, p.cfg.Timeout, log)
	}
	var out outcome
	if stream {
		out, err = sp.outcome(printTimeout.Load())
	} else {
		if res.OutputTruncated {
			return nil, provider.Errorf(Name, "%w: agy wrote %d bytes, limit %d", provider.ErrTooLarge, res.OutputBytes, p.cfg.MaxReplyBytes)
		}
		out, err = parseJSON(res.Output, p.cfg.Log, printTimeout.Load())
	}
	if err != nil {
		if cerr := command.Check(ctx, Name, res, p.cfg.Timeout, log); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	reply, err := out.classify()
	if err != nil {
		return nil, err
	}
	if reply.Latency <= 0 {
		reply.Latency = time.Since(start)
	}
	return reply, nil
}

// outcome is agy's final result, from either output format.
type outcome struct {
	result       gjson.Result // the result object: status, response, usage, error, denied_actions
	streamed     string       // text deltas, stream mode
	stepUsage    gjson.Result // the last step_update usage, stream mode
	printTimeout bool         // standard error said "print timeout"
}

// classify applies the traps before trusting status.
func (o outcome) classify() (*provider.Reply, error) {
	r := o.result
	status := strings.ToUpper(r.Get("status").String())
	response := r.Get("response").String()
	if !r.Get("response").Exists() {
		response = o.streamed
	}
	u := r.Get("usage")
	if !u.IsObject() {
		u = o.stepUsage
	}
	usage, zero := usageOf(u)
	denied := r.Get("denied_actions")
	switch {
	case o.printTimeout:
		return nil, provider.Errorf(Name, "%w: agy reported a print timeout (status %s, %d bytes of partial response)", provider.ErrTimeout, orNone(status), len(response))
	case status != "SUCCESS":
		if denied.IsArray() && len(denied.Array()) > 0 {
			return nil, provider.Errorf(Name, "%w: status %s: %s", provider.ErrDenied, status, deniedText(denied))
		}
		msg := r.Get("error").String()
		if e := r.Get("error.message"); e.Exists() {
			msg = e.String()
		}
		return nil, provider.Errorf(Name, "status %s: %s", orNone(status), orNone(oneLine(msg)))
	case strings.TrimSpace(response) == "":
		if denied.IsArray() && len(denied.Array()) > 0 {
			return nil, provider.Errorf(Name, "%w: empty response with %s", provider.ErrDenied, deniedText(denied))
		}
		return nil, provider.Errorf(Name, "%w: SUCCESS with an empty response", provider.ErrProtocol)
	case zero && !gjson.Valid(strings.TrimSpace(stripFence(response))):
		// The print-timeout trap without its stderr line: success, zero
		// tokens, and a response cut short.
		return nil, provider.Errorf(Name, "%w: SUCCESS with zero usage and an incomplete response (%d bytes): treated as a print timeout", provider.ErrTimeout, len(response))
	}
	reply := &provider.Reply{Text: stripFence(response), Usage: usage}
	if d := r.Get("duration_seconds").Float(); d > 0 {
		reply.Latency = time.Duration(d * float64(time.Second))
	}
	return reply, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func deniedText(d gjson.Result) string {
	var parts []string
	for _, a := range d.Array() {
		s := a.Get("tool").String()
		if s == "" {
			s = oneLine(a.Raw)
		}
		if why := a.Get("reason").String(); why != "" {
			s += " (" + why + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d action(s) auto-denied: %s", len(parts), oneLine(strings.Join(parts, "; ")))
}

// usageOf reads agy's usage (input/output tokens, or the OpenAI names);
// zero says it was reported and all zero.
func usageOf(u gjson.Result) (*provider.Usage, bool) {
	if !u.IsObject() {
		return nil, false
	}
	pick := func(names ...string) int64 {
		for _, n := range names {
			if v := u.Get(n); v.Exists() {
				return v.Int()
			}
		}
		return 0
	}
	out := &provider.Usage{
		InputTokens:  pick("input_tokens", "prompt_tokens"),
		OutputTokens: pick("output_tokens", "completion_tokens"),
		TotalTokens:  pick("total_tokens"),
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out, out.TotalTokens == 0
}

// stripFence removes one Markdown code fence around the whole text, the
// one liberty models take most often with "reply with JSON only".
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s
	}
	t = strings.TrimSuffix(t, "```")
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s
	}
	return strings.TrimSpace(t[nl+1:])
}

// parseJSON finds agy's one JSON document in its standard output (lines
// around it, if any, are logs, written to log): a single-line object with
// a status, or the span from the first line starting with "{" to the last
// line ending with "}". printTimeout is what standard error said.
func parseJSON(out string, log io.Writer, printTimeout bool) (o outcome, err error) {
	o.printTimeout = printTimeout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	from, to := -1, -1
	defer func() {
		if log == nil {
			return
		}
		for i, l := range lines {
			if (i < from || i > to) && strings.TrimSpace(l) != "" {
				_, _ = io.WriteString(log, Name+": "+l+"\n")
			}
		}
	}()
	first, last := -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "{") && first < 0 {
			first = i
		}
		if strings.HasSuffix(t, "}") {
			last = i
		}
	}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "{") && gjson.Valid(t) && gjson.Get(t, "status").Exists() {
			o.result, from, to = gjson.Parse(t), i, i
			return o, nil
		}
	}
	if first >= 0 && last >= first {
		span := strings.Join(lines[first:last+1], "\n")
		if gjson.Valid(span) {
			o.result, from, to = gjson.Parse(span), first, last
			return o, nil
		}
	}
	if o.printTimeout {
		return o, provider.Errorf(Name, "%w: agy reported a print timeout and no result", provider.ErrTimeout)
	}
	return o, provider.Errorf(Name, "%w: no JSON result in agy's output (last line: %q)", provider.ErrProtocol, command.LastLine(out))
}

// streamParser reads agy's standard output as it arrives: stream-json
// event lines (text deltas forwarded at once, the final result kept); a
// line that is not an event is forwarded to log.
type streamParser struct {
	mu          sync.Mutex
	log, deltas io.Writer
	max         int64
	buf         []byte
	text        strings.Builder
	result      gjson.Result
	hasResult   bool
	stepUsage   gjson.Result
	tooLarge    bool
}

func (s *streamParser) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := strings.IndexByte(string(s.buf), '\n')
		if i < 0 {
			if int64(len(s.buf)) > s.max {
				s.tooLarge = true
				s.buf = s.buf[:0]
			}
			return len(p), nil
		}
		s.line(string(s.buf[:i]))
		s.buf = s.buf[i+1:]
	}
}

func (s *streamParser) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.line(string(s.buf))
		s.buf = nil
	}
}

func (s *streamParser) line(l string) {
	t := strings.TrimSpace(l)
	if t == "" {
		return
	}
	if strings.HasPrefix(t, "{") && gjson.Valid(t) {
		ev := gjson.Parse(t)
		switch ev.Get("event").String() {
		case "step_update":
			su := ev.Get("step_update")
			if d := su.Get("text_delta"); d.Type == gjson.String && d.Str != "" {
				if int64(s.text.Len()+len(d.Str)) > s.max {
					s.tooLarge = true
					return
				}
				s.text.WriteString(d.Str)
				if s.deltas != nil {
					_, _ = io.WriteString(s.deltas, d.Str)
				}
			}
			if u := su.Get("usage"); u.IsObject() {
				s.stepUsage = u
			}
		case "result":
			s.result, s.hasResult = ev.Get("result"), true
		}
		return
	}
	if s.log != nil {
		_, _ = io.WriteString(s.log, Name+": "+l+"\n")
	}
}

// outcome is the stream's result once agy exited; printTimeout is what
// its standard error said.
func (s *streamParser) outcome(printTimeout bool) (outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deltas != nil && s.text.Len() > 0 {
		_, _ = io.WriteString(s.deltas, "\n")
	}
	o := outcome{result: s.result, streamed: s.text.String(), stepUsage: s.stepUsage, printTimeout: printTimeout}
	switch {
	case s.tooLarge:
		return o, provider.Errorf(Name, "%w: more than %d bytes", provider.ErrTooLarge, s.max)
	case !s.hasResult && printTimeout:
		return o, provider.Errorf(Name, "%w: agy reported a print timeout and no result", provider.ErrTimeout)
	case !s.hasResult:
		return o, provider.Errorf(Name, "%w: the stream ended without a result event", provider.ErrProtocol)
	}
	return o, nil
}
