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
	"github.com/art-runtime/art/lib/execx"
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

// Features are the flags a probed agy lists in its help, and its version
// (from `agy --version`; zero when it printed none).
type Features struct {
	OutputFormat, StreamJSON, Mode, Sandbox, JSONSchema, PrintTimeout bool
	Version                                                           Version
}

// Version is agy's release, major.minor.patch.
type Version [3]int

func (v Version) String() string {
	if v.unknown() {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}

func (v Version) unknown() bool { return v == Version{} }

func (v Version) less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// within reports whether v is in [lo, hi]; an unknown version is within
// every range, so an agy that does not say its version gets every
// tolerance.
func (v Version) within(lo, hi Version) bool {
	return v.unknown() || (!v.less(lo) && !hi.less(v))
}

// The output shapes that depend on agy's release (from its changelog and
// published captures of its output):
var (
	// rawNewlineJSON: 1.1.8, the first release with --output-format json,
	// writes the response's newlines raw inside its JSON string.
	rawNewlineJSON = [2]Version{{1, 1, 8}, {1, 1, 8}}
	// errorTimeout: 1.1.12 to 1.1.27 report an expired --print-timeout as
	// {"status":"ERROR","error":"timeout waiting for response"}; 1.1.28
	// and later return the partial output as SUCCESS with zero usage and
	// a stderr line saying "print timeout" (the trap classify handles for
	// every version).
	errorTimeout = [2]Version{{1, 1, 12}, {1, 1, 27}}
)

var versionRE = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// parseVersion reads the first major.minor.patch in s.
func parseVersion(s string) Version {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}
	}
	var v Version
	for i := range v {
		fmt.Sscan(m[i+1], &v[i])
	}
	return v
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
		// The version chooses how its output is parsed; an agy that
		// will not say is parsed with every tolerance.
		if vr, err := p.cmd.Run(ctx, []string{"--version"}, nil, probeTimeout, 4<<10, nil, nil); err == nil && vr.Status == execx.StatusSucceeded {
			f.Version = parseVersion(vr.Output)
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
	var flags flagError
	log := command.NewLog(Name, p.cfg.Log, func(line string) {
		if strings.Contains(strings.ToLower(line), "print timeout") {
			printTimeout.Store(true)
		}
		flags.see(line)
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
	if cause := flags.cause(); cause != "" && res.Status != execx.StatusSucceeded {
		// Go's flag package prints the cause, then "Usage of agy:" and
		// every flag: the last line says nothing.
		return nil, provider.Errorf(Name, "exit %d: agy refused its arguments (version %s): %s", res.ExitCode, f.Version, cause)
	}
	var out outcome
	if stream {
		out, err = sp.outcome(printTimeout.Load())
	} else {
		if res.OutputTruncated {
			return nil, provider.Errorf(Name, "%w: agy wrote %d bytes, limit %d", provider.ErrTooLarge, res.OutputBytes, p.cfg.MaxReplyBytes)
		}
		out, err = parseJSON(res.Output, p.cfg.Log, printTimeout.Load(), f.Version.within(rawNewlineJSON[0], rawNewlineJSON[1]))
	}
	if err != nil {
		if cerr := command.Check(ctx, Name, res, p.cfg.Timeout, log); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	out.version = f.Version
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
	result       gjson.Result // the result object: status, response, structured_output, usage, error, denied_actions
	streamed     string       // text deltas, stream mode
	stepUsage    gjson.Result // the last step_update usage, stream mode
	stepError    string       // an agent_response step that ended in ERROR, stream mode
	printTimeout bool         // standard error said "print timeout"
	version      Version
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
	// With --json-schema, agy puts the validated object in
	// structured_output; response may then be prose around it.
	if so := r.Get("structured_output"); so.IsObject() {
		response = so.Raw
	}
	msg := r.Get("error").String()
	if e := r.Get("error.message"); e.Exists() {
		msg = e.String()
	}
	switch {
	case o.printTimeout:
		return nil, provider.Errorf(Name, "%w: agy reported a print timeout (status %s, %d bytes of partial response)", provider.ErrTimeout, orNone(status), len(response))
	case o.stepError != "":
		return nil, provider.Errorf(Name, "an agent_response step ended in ERROR (final status %s): %s", orNone(status), orNone(oneLine(o.stepError)))
	case status == "ERROR" && o.version.within(errorTimeout[0], errorTimeout[1]) && strings.Contains(strings.ToLower(msg), "timeout waiting for response"):
		return nil, provider.Errorf(Name, "%w: agy %s reported %q", provider.ErrTimeout, o.version, oneLine(msg))
	case strings.TrimSpace(response) == "" && denied.IsArray() && len(denied.Array()) > 0:
		// The model reached for agy's own tools, which headless mode
		// auto-denies: the model is told, the run goes on.
		return &provider.Reply{Usage: usage, Denied: deniedList(denied)}, nil
	case status != "SUCCESS":
		return nil, provider.Errorf(Name, "status %s: %s", orNone(status), orNone(oneLine(msg)))
	case strings.TrimSpace(response) == "":
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

// deniedList names each denied action: agy writes {"action",
// "display_name"} ("run_command", "Run command"); older captures
// {"tool","reason"}.
func deniedList(d gjson.Result) []string {
	var out []string
	for _, a := range d.Array() {
		s := a.Get("action").String()
		if s == "" {
			s = a.Get("tool").String()
		}
		if s == "" {
			s = oneLine(a.Raw)
		}
		if dn := a.Get("display_name").String(); dn != "" && dn != s {
			s += " (" + oneLine(dn) + ")"
		} else if why := a.Get("reason").String(); why != "" {
			s += " (" + oneLine(why) + ")"
		}
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		out = append(out, s)
		if len(out) == 20 {
			break
		}
	}
	return out
}

// flagError watches agy's standard error for Go's flag package failing:
// the line before "Usage of agy:" is the cause.
type flagError struct {
	mu         sync.Mutex
	prev, what string
}

func (f *flagError) see(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "Usage of ") && f.what == "" {
		f.what = f.prev
	}
	if t != "" {
		f.prev = t
	}
}

func (f *flagError) cause() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return oneLine(f.what)
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
		InputTokens:     pick("input_tokens", "prompt_tokens"),
		OutputTokens:    pick("output_tokens", "completion_tokens"),
		TotalTokens:     pick("total_tokens"),
		CacheReadTokens: pick("cache_read_tokens"),
		ThinkingTokens:  pick("thinking_tokens"),
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
func parseJSON(out string, log io.Writer, printTimeout, rawNewlines bool) (o outcome, err error) {
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
		// agy 1.1.8 writes the response's newlines raw inside the JSON
		// string: escape control characters inside strings, and only
		// there, and try once more.
		if fixed := escapeRawControls(span); rawNewlines && gjson.Valid(fixed) && gjson.Get(fixed, "status").Exists() {
			o.result, from, to = gjson.Parse(fixed), first, last
			return o, nil
		}
	}
	if o.printTimeout {
		return o, provider.Errorf(Name, "%w: agy reported a print timeout and no result", provider.ErrTimeout)
	}
	return o, provider.Errorf(Name, "%w: no JSON result in agy's output (last line: %q)", provider.ErrProtocol, command.LastLine(out))
}

// escapeRawControls escapes the control characters (a raw newline, tab,
// carriage return) that appear inside JSON strings of s, leaving the
// whitespace between tokens alone.
func escapeRawControls(s string) string {
	var b strings.Builder
	in, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in && c < 0x20:
			fmt.Fprintf(&b, "\\u%04x", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
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
	stepError   string
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
			kind := su.Get("step_type").String()
			if kind == "" {
				kind = su.Get("type").String()
			}
			state := su.Get("state").String()
			if state == "" {
				state = su.Get("status").String()
			}
			if kind == "agent_response" && strings.EqualFold(state, "ERROR") && s.stepError == "" {
				msg := su.Get("error.message").String()
				if msg == "" {
					msg = su.Get("error").String()
				}
				s.stepError = orNone(msg)
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
	o := outcome{result: s.result, streamed: s.text.String(), stepUsage: s.stepUsage, stepError: s.stepError, printTimeout: printTimeout}
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
