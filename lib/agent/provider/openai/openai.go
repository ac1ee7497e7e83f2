// Package openai is the provider for any OpenAI-compatible
// /v1/chat/completions endpoint: llama.cpp's server, Ollama, vLLM. It sends
// the conversation as chat messages with the decision schema as a nested
// json_schema response_format, and reads the reply either whole or as an
// SSE stream.
//
// It trusts nothing it receives: the reply body is bounded, the stream
// reader accepts a usage-only chunk with empty choices, a missing usage
// chunk and "data: [DONE]", and the decision text goes back to the loop,
// which decodes it strictly whatever the server claimed to enforce. The API
// key is read by the caller from an environment variable and only ever put
// in the Authorization header: never in an error, an event or a transcript.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
	// StreamFraming is how many bytes of SSE stream are allowed per byte of
	// MaxReplyBytes: each token arrives wrapped in a chunk object.
	StreamFraming = 16
)

// Config configures the provider.
type Config struct {
	// BaseURL is the API root including /v1, e.g. http://127.0.0.1:8080/v1
	// (llama.cpp) or http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	Model   string
	// APIKey, if set, is sent as a bearer token.
	APIKey string
	// Timeout bounds one call, wall clock (default 5m).
	Timeout time.Duration
	// MaxReplyBytes bounds the response body, or the decision text of a
	// stream, whose framing (one JSON chunk per token) may take up to
	// StreamFraming times as much (default 4 MiB).
	MaxReplyBytes int64
	// Stream asks for an SSE stream; text deltas go to StreamTo as they
	// arrive.
	Stream   bool
	StreamTo io.Writer
	// Client is the HTTP client (nil: a private one). Its Timeout should be
	// zero: the provider bounds each call with its own context.
	Client *http.Client
}

// Provider talks to one endpoint.
type Provider struct {
	cfg      Config
	endpoint string
	client   *http.Client
	own      bool
}

// New validates cfg and returns a provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "base-url: %q is not an http(s) URL", redact(cfg.BaseURL))
	}
	if cfg.Model == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "model: required for the openai provider")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	p := &Provider{cfg: cfg, endpoint: strings.TrimSuffix(u.String(), "/") + "/chat/completions", client: cfg.Client}
	if p.client == nil {
		p.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		p.own = true
	}
	return p, nil
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

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Messages renders a request as chat messages: the instructions as the
// system message, the task, then each step as the model's reply and the
// observation, the last user message ending with where the run stands.
func Messages(req *provider.Request) []message {
	msgs := []message{{Role: "system", Content: provider.Instructions(req)}}
	task := "Task:\n" + req.Task
	if len(req.History) == 0 {
		task += "\n\n" + provider.StepNote(req)
	}
	msgs = append(msgs, message{Role: "user", Content: task})
	for i, t := range req.History {
		msgs = append(msgs, message{Role: "assistant", Content: t.Reply})
		obs := fmt.Sprintf("Observation of step %d:\n%s", t.Step, t.Observation)
		if i == len(req.History)-1 {
			obs += "\n\n" + provider.StepNote(req)
		}
		msgs = append(msgs, message{Role: "user", Content: obs})
	}
	return msgs
}

// Body is the JSON request body for req.
func (p *Provider) Body(req *provider.Request) ([]byte, error) {
	body := map[string]any{
		"model":    p.cfg.Model,
		"messages": Messages(req),
		"response_format": map[string]any{
			"type": "json_schema",
			"json_schema": map[string]any{
				"name":   "decision",
				"schema": json.RawMessage(provider.DecisionSchema),
				"strict": true,
			},
		},
		"stream": p.cfg.Stream,
	}
	if p.cfg.Stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return json.Marshal(body)
}

// Decide sends one chat completion request.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	body, err := p.Body(req)
	if err != nil {
		return nil, provider.Errorf(Name, "encode request: %w", err)
	}
	cctx, cancel := provider.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	start := time.Now()
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
		return nil, p.fail(ctx, cctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, provider.Errorf(Name, "%s: HTTP %d: %s", redact(p.endpoint), resp.StatusCode, errorText(b))
	}
	var reply *provider.Reply
	if p.cfg.Stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		reply, err = p.readStream(resp.Body)
	} else {
		reply, err = p.readWhole(resp.Body)
	}
	if err != nil {
		if cctx.Err() != nil {
			return nil, p.fail(ctx, cctx, err)
		}
		return nil, err
	}
	reply.Latency = time.Since(start)
	return reply, nil
}

func (p *Provider) fail(parent, call context.Context, err error) error {
	if call.Err() != nil {
		return provider.CtxErr(Name, parent, call, p.cfg.Timeout)
	}
	return provider.Errorf(Name, "%w", err)
}

// readWhole reads a non-streaming completion.
func (p *Provider) readWhole(r io.Reader) (*provider.Reply, error) {
	b, err := io.ReadAll(io.LimitReader(r, p.cfg.MaxReplyBytes+1))
	if err != nil {
		return nil, provider.Errorf(Name, "read reply: %w", err)
	}
	if int64(len(b)) > p.cfg.MaxReplyBytes {
		return nil, provider.Errorf(Name, "%w: more than %d bytes", provider.ErrTooLarge, p.cfg.MaxReplyBytes)
	}
	if !gjson.ValidBytes(b) {
		return nil, provider.Errorf(Name, "%w: the body is not JSON: %s", provider.ErrProtocol, errorText(b))
	}
	doc := gjson.ParseBytes(b)
	if e := doc.Get("error"); e.Exists() {
		return nil, provider.Errorf(Name, "server error: %s", errorText(b))
	}
	content := doc.Get("choices.0.message.content")
	if content.Type != gjson.String {
		return nil, provider.Errorf(Name, "%w: no choices[0].message.content in the reply", provider.ErrProtocol)
	}
	return &provider.Reply{Text: content.String(), Usage: usageOf(doc.Get("usage"))}, nil
}

// readStream reads an SSE stream of chat.completion.chunk objects: it
// joins the data lines of each event, stops at "[DONE]" (or EOF: some
// servers omit it), appends every choices[0].delta.content, forwards it to
// StreamTo, and keeps the last usage object seen (a usage-only chunk has
// empty choices; a stream may carry no usage at all).
func (p *Provider) readStream(r io.Reader) (*provider.Reply, error) {
	sc := newLineReader(r, StreamFraming*p.cfg.MaxReplyBytes)
	var (
		text  strings.Builder
		usage *provider.Usage
		data  []string
	)
	dispatch := func() (bool, error) {
		if len(data) == 0 {
			return false, nil
		}
		payload := strings.Join(data, "\n")
		data = data[:0]
		if strings.TrimSpace(payload) == "[DONE]" {
			return true, nil
		}
		if !gjson.Valid(payload) {
			return false, provider.Errorf(Name, "%w: stream chunk is not JSON: %s", provider.ErrProtocol, errorText([]byte(payload)))
		}
		doc := gjson.Parse(payload)
		if doc.Get("error").Exists() {
			return false, provider.Errorf(Name, "server error in stream: %s", errorText([]byte(payload)))
		}
		if d := doc.Get("choices.0.delta.content"); d.Type == gjson.String && d.Str != "" {
			if int64(text.Len()+len(d.Str)) > p.cfg.MaxReplyBytes {
				return false, provider.Errorf(Name, "%w: more than %d bytes of content", provider.ErrTooLarge, p.cfg.MaxReplyBytes)
			}
			text.WriteString(d.Str)
			if p.cfg.StreamTo != nil {
				_, _ = io.WriteString(p.cfg.StreamTo, d.Str)
			}
		}
		if u := usageOf(doc.Get("usage")); u != nil {
			usage = u
		}
		return false, nil
	}
	for {
		line, err := sc.next()
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLineBudget) {
				return nil, provider.Errorf(Name, "%w: stream longer than %d bytes", provider.ErrTooLarge, StreamFraming*p.cfg.MaxReplyBytes)
			}
			return nil, provider.Errorf(Name, "read stream: %w", err)
		}
		eof := errors.Is(err, io.EOF)
		switch {
		case line == "" && !eof:
			if done, err := dispatch(); err != nil || done {
				return p.streamEnd(text.String(), usage, err)
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// Other fields (event:, id:, retry:) and comments (":") carry
		// nothing we use.
		if eof {
			_, err := dispatch()
			return p.streamEnd(text.String(), usage, err)
		}
	}
}

func (p *Provider) streamEnd(text string, usage *provider.Usage, err error) (*provider.Reply, error) {
	if p.cfg.StreamTo != nil && text != "" {
		_, _ = io.WriteString(p.cfg.StreamTo, "\n")
	}
	if err != nil {
		return nil, err
	}
	return &provider.Reply{Text: text, Usage: usage}, nil
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
