// Package openai is the provider for any OpenAI-compatible
// /v1/chat/completions endpoint: llama.cpp's server, Ollama, vLLM, hosted
// APIs. It sends the conversation as chat messages, fitted to the model's
// context, with the decision schema either as a strict json_schema
// response_format or (ToolCall) as the parameters of one function tool,
// bounds every reply with max_tokens, and reads the reply either whole or
// as an SSE stream.
//
// It trusts nothing it receives: the reply body is bounded; a reply the
// server cut at its token limit (finish_reason "length") is marked
// Truncated, not passed off as complete; a stream must end with "data:
// [DONE]", and one that stops short or in the middle of a chunk is a
// transport failure, not a malformed decision; the stream reader accepts a
// usage-only chunk with empty choices and a missing usage chunk; and the
// decision text goes back to the loop, which decodes it strictly whatever
// the server claimed to enforce. The API key is read by the caller from an
// environment variable and only ever put in the Authorization header:
// never in an error, an event or a transcript.
//
// It retries nothing unless told: with Retries > 0, a 429, 502, 503 or
// 504 reply, or a connection refused or reset before a reply arrived, is
// tried again after a backoff (or the server's Retry-After), all inside
// the one call's Timeout, and every failed attempt is reported with the
// reply or the final error.
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/exitcode"
)

// Name is the provider's name in errors.
const Name = "openai"

// Defaults.
const (
	DefaultTimeout       = 5 * time.Minute
	DefaultMaxReplyBytes = 4 << 20
	// DefaultMaxTokens bounds one reply: a decision is a few hundred
	// tokens; an edit of a large block a few thousand.
	DefaultMaxTokens = 2048
	// DefaultContextTokens is the context assumed for the model when none
	// is given: what small local models are commonly served with is 4096
	// to 32768; set --context-tokens to the server's real value.
	DefaultContextTokens = 16384
	// MinPromptTokens is the least room the conversation must have once
	// the reply's max_tokens is reserved.
	MinPromptTokens = 1024
	// StreamFraming is how many bytes of SSE stream are allowed per byte of
	// MaxReplyBytes: each token arrives wrapped in a chunk object.
	StreamFraming = 16
	// MaxRetries bounds Config.Retries.
	MaxRetries = 10
)

// Token-limit field names: OpenAI's current models take
// max_completion_tokens (max_tokens is deprecated there and refused by its
// reasoning models); llama.cpp, Ollama and vLLM read max_tokens.
const (
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// Config configures the provider.
type Config struct {
	// BaseURL is the API root including /v1, e.g. http://127.0.0.1:8080/v1
	// (llama.cpp) or http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	Model   string
	// APIKey, if set, is sent as a bearer token.
	APIKey string
	// Timeout bounds one call, wall clock, retries included (default 5m).
	Timeout time.Duration
	// MaxReplyBytes bounds the response body, or the decision text of a
	// stream, whose framing (one JSON chunk per token) may take up to
	// StreamFraming times as much (default 4 MiB).
	MaxReplyBytes int64
	// MaxTokens is the token limit of one reply (default DefaultMaxTokens).
	MaxTokens int
	// TokenField is the request field MaxTokens is sent as: FieldMaxTokens
	// or FieldMaxCompletionTokens; empty chooses max_completion_tokens for
	// api.openai.com and max_tokens for everything else, and switches to
	// the other name, once, when the server refuses the first with an HTTP
	// 400 that names the other (OpenAI: "Unsupported parameter:
	// 'max_tokens' ... Use 'max_completion_tokens' instead.").
	TokenField string
	// ContextTokens is the model's context: the conversation is fitted to
	// ContextTokens - MaxTokens (estimated, see provider.BytesPerToken)
	// (default DefaultContextTokens).
	ContextTokens int
	// ToolCall sends the decision schema as one function tool ("decide",
	// tool_choice "required") instead of a json_schema response_format,
	// and reads the decision from the tool call's arguments.
	ToolCall bool
	// Retries is how many times a transient failure is retried (0: none).
	Retries int
	// Backoff is the wait before the first retry, doubling after each
	// (default 500ms, at most 8s); a Retry-After header overrides it.
	Backoff time.Duration
	// Stream asks for an SSE stream; text deltas go to StreamTo as they
	// arrive.
	Stream   bool
	StreamTo io.Writer
	// Client is the HTTP client (nil: a private one). Its Timeout should be
	// zero: the provider bounds each call with its own context.
	Client *http.Client
	// ServerContext asks the server, before the first request, the
	// context it serves the model with (vLLM /v1/models, llama-server
	// /props, Ollama /api/ps and /api/show) and fits to the smaller of
	// that and ContextTokens. Whatever it does, the provider learns bytes
	// per token from usage and, against a server that does not refuse an
	// over-long prompt, takes a prompt_tokens far below the estimate as a
	// silent truncation: it fits to a smaller context and sends again.
	ServerContext bool
}

// Provider talks to one endpoint.
type Provider struct {
	cfg      Config
	endpoint string
	client   *http.Client
	own      bool

	base string // BaseURL without a trailing slash

	mu        sync.Mutex
	field     string // the token-limit field sent now
	autoField bool   // field was chosen, not configured: it may switch once
	fit       fitState
}

// New validates cfg and returns a provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitcode.Fieldf(exitcode.Usage, "BaseURL", redact(cfg.BaseURL), "%s: %q is not an http(s) URL", exitcode.Ref("BaseURL"), redact(cfg.BaseURL))
	}
	if cfg.Model == "" {
		return nil, exitcode.Field(exitcode.Usage, "Model", "", "required for the openai provider")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.ContextTokens == 0 {
		cfg.ContextTokens = DefaultContextTokens
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	switch {
	case cfg.MaxTokens < 1:
		return nil, exitcode.Field(exitcode.Usage, "MaxTokens", "", "must be at least 1, got %d", cfg.MaxTokens)
	case cfg.ContextTokens < cfg.MaxTokens+MinPromptTokens:
		return nil, exitcode.Fieldf(exitcode.Usage, "ContextTokens", strconv.Itoa(cfg.ContextTokens), "%s: %d leaves less than %d tokens for the conversation once %s %d is reserved; raise it (to the server's context size) or lower %s",
			exitcode.Ref("ContextTokens"), cfg.ContextTokens, MinPromptTokens, exitcode.Ref("MaxTokens"), cfg.MaxTokens, exitcode.Ref("MaxTokens"))
	case cfg.Retries < 0 || cfg.Retries > MaxRetries:
		return nil, exitcode.Fieldf(exitcode.Usage, "Retries", strconv.Itoa(cfg.Retries), "provider-retries: must be between 0 and %d, got %d", MaxRetries, cfg.Retries)
	}
	auto := cfg.TokenField == ""
	switch cfg.TokenField {
	case "":
		cfg.TokenField = FieldMaxTokens
		if strings.EqualFold(u.Hostname(), "api.openai.com") {
			cfg.TokenField = FieldMaxCompletionTokens
		}
	case FieldMaxTokens, FieldMaxCompletionTokens:
	default:
		return nil, exitcode.Fieldf(exitcode.Usage, "TokenField", cfg.TokenField, "max-tokens-field: %q is neither %s nor %s", cfg.TokenField, FieldMaxTokens, FieldMaxCompletionTokens)
	}
	base := strings.TrimSuffix(u.String(), "/")
	p := &Provider{cfg: cfg, base: base, endpoint: base + "/chat/completions", client: cfg.Client, field: cfg.TokenField, autoField: auto}
	p.fit.context = cfg.ContextTokens
	if p.client == nil {
		p.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		p.own = true
	}
	return p, nil
}

// Decide sends one chat completion request, retrying transient failures
// as configured, and sending again, fitted to a smaller context, a prompt
// the server truncated silently.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	cctx, cancel := provider.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	start := time.Now()
	notes := p.probeOnce(cctx)
	var retries []provider.Attempt
	for refits := 0; ; refits++ {
		body, sent, err := p.build(req)
		if err != nil {
			return nil, withRetries(err, retries, len(retries)+1)
		}
		reply, err := p.send(ctx, cctx, req, body, &retries)
		if err != nil {
			return nil, err
		}
		more, truncated := p.learn(cctx, sent, reply, len(req.History) == 0)
		notes = append(notes, more...)
		if !truncated {
			reply.Latency = time.Since(start)
			reply.Retries = retries
			reply.Notes = notes
			return reply, nil
		}
		if refits == maxRefits {
			return nil, withRetries(provider.Errorf(Name, "the server still truncated the prompt silently after %d smaller fits (its context is smaller than the reply's %d tokens and the conversation need); lower the reply token limit or raise the server's context", maxRefits, p.cfg.MaxTokens), retries, len(retries)+1)
		}
		retries = append(retries, provider.Attempt{Attempt: len(retries) + 1, Error: more[len(more)-1]})
	}
}

// maxRefits bounds how many times one call fits to a smaller context after
// a silent truncation.
const maxRefits = 4

// send is one request sent until it gets a reply: retrying transient
// failures as configured and, once, under the other token-limit field;
// retries collects the failed attempts.
func (p *Provider) send(ctx, cctx context.Context, req *provider.Request, body []byte, retries *[]provider.Attempt) (*provider.Reply, error) {
	for try, attempt := 1, len(*retries)+1; ; try, attempt = try+1, attempt+1 {
		reply, err := p.once(ctx, cctx, body)
		if err == nil {
			return reply, nil
		}
		if p.switchField(err) {
			// The server named the other token-limit field: send it
			// again under that name (not a retry of a transient failure).
			*retries = append(*retries, provider.Attempt{Attempt: attempt, Error: oneLine(err)})
			if body, _, err = p.build(req); err != nil {
				return nil, withRetries(err, *retries, attempt+1)
			}
			continue
		}
		var tr *transient
		isTransient := errors.As(err, &tr)
		if isTransient {
			err = tr.err
		}
		if !isTransient || try > p.cfg.Retries || cctx.Err() != nil {
			return nil, withRetries(err, *retries, attempt)
		}
		wait := p.backoff(try, tr.retryAfter)
		if dl, ok := cctx.Deadline(); ok && time.Until(dl) < wait {
			err = &provider.Error{Provider: Name, Err: fmt.Errorf("%w (not retried: waiting %v would pass the provider timeout of %v)", tr.err.Err, wait.Round(time.Millisecond), p.cfg.Timeout)}
			return nil, withRetries(err, *retries, attempt)
		}
		*retries = append(*retries, provider.Attempt{Attempt: attempt, Error: oneLine(err), WaitMS: wait.Milliseconds()})
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-cctx.Done():
			t.Stop()
			return nil, withRetries(provider.CtxErr(Name, ctx, cctx, p.cfg.Timeout), *retries, attempt)
		}
	}
}

// withRetries attaches the attempts made to the final error, when there
// were retries to speak of.
func withRetries(err error, retries []provider.Attempt, attempt int) error {
	if len(retries) == 0 {
		return err
	}
	all := append(retries, provider.Attempt{Attempt: attempt, Error: oneLine(err)})
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Retries = all
		return err
	}
	return &provider.Error{Provider: Name, Err: err, Retries: all}
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// once is one HTTP exchange.
func (p *Provider) once(parent, cctx context.Context, body []byte) (*provider.Reply, error) {
	hreq, err := http.NewRequestWithContext(cctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, provider.Errorf(Name, "request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if p.cfg.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if p.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		if cctx.Err() != nil {
			return nil, p.fail(parent, cctx, err)
		}
		err = provider.Errorf(Name, "%s: %w: %w", redact(p.endpoint), provider.ErrTransport, unwrapURL(err))
		if resetOrRefused(err) {
			return nil, &transient{err: err.(*provider.Error)}
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := provider.Errorf(Name, "%s: %w", redact(p.endpoint), &statusError{code: resp.StatusCode, text: errorText(b)})
		if retryableStatus(resp.StatusCode) {
			return nil, &transient{err: err.(*provider.Error), retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
		}
		return nil, err
	}
	var reply *provider.Reply
	if p.cfg.Stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		reply, err = p.readStream(resp.Body)
	} else {
		reply, err = p.readWhole(resp.Body)
	}
	if err != nil {
		if cctx.Err() != nil {
			return nil, p.fail(parent, cctx, err)
		}
		return nil, err
	}
	return reply, nil
}

// statusError is a non-2xx reply: "HTTP 503: message".
type statusError struct {
	code int
	text string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.text) }

// switchField reports whether err is an HTTP 400 naming the other
// token-limit field while the field was chosen automatically and has not
// switched yet; if so it switches.
func (p *Provider) switchField(err error) bool {
	var se *statusError
	if !errors.As(err, &se) || se.code != http.StatusBadRequest {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	other := FieldMaxCompletionTokens
	if p.field == FieldMaxCompletionTokens {
		other = FieldMaxTokens
	}
	low := strings.ToLower(se.text)
	refused := strings.Contains(low, "unsupported") || strings.Contains(low, "not supported") || strings.Contains(low, "unrecognized") || strings.Contains(low, "unknown")
	if !p.autoField || !(strings.Contains(se.text, other) || (refused && strings.Contains(se.text, p.field))) {
		return false
	}
	p.field, p.autoField = other, false
	return true
}

func (p *Provider) tokenField() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.field
}

// unwrapURL drops *url.Error's "Post \"URL\":" prefix: the endpoint is
// already named, redacted.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Close releases idle connections of the provider's own client.
func (p *Provider) Close() {
	if p.own {
		p.client.CloseIdleConnections()
	}
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func (p *Provider) fail(parent, call context.Context, err error) error {
	if call.Err() != nil {
		return provider.CtxErr(Name, parent, call, p.cfg.Timeout)
	}
	return provider.Errorf(Name, "%w", err)
}

// usageOf reads an OpenAI usage object; nil when absent or null.
func usageOf(u gjson.Result) *provider.Usage {
	if !u.IsObject() {
		return nil
	}
	out := &provider.Usage{
		InputTokens:  u.Get("prompt_tokens").Int(),
		OutputTokens: u.Get("completion_tokens").Int(),
		TotalTokens:  u.Get("total_tokens").Int(),
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

// errorText is a short single line of a server's error body: the
// error.message field when there is one, else the first bytes.
func errorText(b []byte) string {
	s := ""
	if gjson.ValidBytes(b) {
		if m := gjson.GetBytes(b, "error.message"); m.Exists() {
			s = m.String()
		} else if m := gjson.GetBytes(b, "error"); m.Type == gjson.String {
			s = m.String()
		}
	}
	if s == "" {
		s = string(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
