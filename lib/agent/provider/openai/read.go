package openai

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
)

// readWhole reads a non-streaming completion.
func (p *Provider) readWhole(r io.Reader) (*provider.Reply, error) {
	b, err := io.ReadAll(io.LimitReader(r, p.cfg.MaxReplyBytes+1))
	if err != nil {
		return nil, provider.Errorf(Name, "%s: read reply: %w: %w", redact(p.endpoint), provider.ErrTransport, err)
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
	msg := doc.Get("choices.0.message")
	fr := doc.Get("choices.0.finish_reason")
	reply := &provider.Reply{Usage: usageOf(doc.Get("usage")), Truncated: fr.String() == "length"}
	// finish_reason null: the server ended the reply without finishing it
	// (Ollama, aborting a reply that repeats itself, answers HTTP 200 with
	// the partial text, or an empty message in tool mode).
	reply.Ended = doc.Get("choices.0").IsObject() && (fr.Type == gjson.Null || fr.String() == "")
	if calls := msg.Get("tool_calls"); p.cfg.ToolCall && calls.IsArray() && len(calls.Array()) > 0 {
		var tc []streamCall
		for _, c := range calls.Array() {
			tc = append(tc, streamCall{name: c.Get("function.name").String(), args: c.Get("function.arguments").String()})
		}
		reply.Text = toolText(tc)
		return reply, nil
	}
	content := msg.Get("content")
	if content.Type != gjson.String {
		if reply.Truncated || reply.Ended {
			return reply, nil // cut before any content
		}
		what := "content"
		if p.cfg.ToolCall {
			what = "tool_calls or content"
		}
		return nil, provider.Errorf(Name, "%w: no choices[0].message.%s in the reply", provider.ErrProtocol, what)
	}
	reply.Text = content.String()
	return reply, nil
}

// streamCall accumulates one tool call of a stream.
type streamCall struct{ name, args string }

// toolText is the decision text of a tool-call reply: the arguments of the
// one "decide" call. Anything else (another tool's name, several calls) is
// passed on as JSON the decoder refuses, so the model is told, as for any
// malformed reply.
func toolText(calls []streamCall) string {
	if len(calls) == 1 && calls[0].name == ToolName {
		return calls[0].args
	}
	type shown struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	out := make([]shown, len(calls))
	for i, c := range calls {
		out[i] = shown{c.name, c.args}
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": out})
	return string(b)
}

// readStream reads an SSE stream of chat.completion.chunk objects: it
// joins the data lines of each event, appends every choices[0].delta.content
// (and, in tool mode, the tool call argument fragments), forwards text to
// StreamTo, keeps the last usage object seen (a usage-only chunk has empty
// choices; a stream may carry no usage at all) and the finish_reason, and
// ends at "data: [DONE]".
//
// A stream whose body ends cleanly at a chunk boundary without [DONE] was
// ended by the server: complete when a finish reason came ("stop",
// "tool_calls"), cut at the token limit with "length", and Ended (a cut
// reply, the model is told) with none; Ollama ends a reply that repeats
// itself this way. Only a read that fails, or a body that stops in the
// middle of a chunk, is a transport failure: the connection closed
// mid-reply.
func (p *Provider) readStream(r io.Reader) (*provider.Reply, error) {
	sc := newLineReader(r, StreamFraming*p.cfg.MaxReplyBytes)
	var (
		text      strings.Builder
		usage     *provider.Usage
		data      []string
		truncated bool
		finish    string
		calls     []streamCall
		args      int // bytes of tool call arguments so far
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
			if int64(text.Len()+args+len(d.Str)) > p.cfg.MaxReplyBytes {
				return false, provider.Errorf(Name, "%w: more than %d bytes of content", provider.ErrTooLarge, p.cfg.MaxReplyBytes)
			}
			text.WriteString(d.Str)
			if p.cfg.StreamTo != nil {
				_, _ = io.WriteString(p.cfg.StreamTo, d.Str)
			}
		}
		for _, tc := range doc.Get("choices.0.delta.tool_calls").Array() {
			i := int(tc.Get("index").Int())
			if i < 0 || i > 15 {
				return false, provider.Errorf(Name, "%w: tool call index %d", provider.ErrProtocol, i)
			}
			for len(calls) <= i {
				calls = append(calls, streamCall{})
			}
			if n := tc.Get("function.name").String(); n != "" {
				calls[i].name = n
			}
			a := tc.Get("function.arguments").String()
			if int64(text.Len()+args+len(a)) > p.cfg.MaxReplyBytes {
				return false, provider.Errorf(Name, "%w: more than %d bytes of content", provider.ErrTooLarge, p.cfg.MaxReplyBytes)
			}
			calls[i].args += a
			args += len(a)
			if p.cfg.StreamTo != nil && a != "" {
				_, _ = io.WriteString(p.cfg.StreamTo, a)
			}
		}
		if fr := doc.Get("choices.0.finish_reason").String(); fr != "" {
			finish = fr
			truncated = fr == "length"
		}
		if u := usageOf(doc.Get("usage")); u != nil {
			usage = u
		}
		return false, nil
	}
	ended := false
	end := func(err error) (*provider.Reply, error) {
		if p.cfg.StreamTo != nil && (text.Len() > 0 || args > 0) {
			_, _ = io.WriteString(p.cfg.StreamTo, "\n")
		}
		if err != nil {
			return nil, err
		}
		reply := &provider.Reply{Text: text.String(), Usage: usage, Truncated: truncated, Ended: ended}
		if p.cfg.ToolCall && len(calls) > 0 {
			reply.Text = toolText(calls)
		}
		return reply, nil
	}
	for {
		line, err := sc.next()
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLineBudget) {
				return end(provider.Errorf(Name, "%w: stream longer than %d bytes", provider.ErrTooLarge, StreamFraming*p.cfg.MaxReplyBytes))
			}
			return end(provider.Errorf(Name, "%s: read stream: %w: %w", redact(p.endpoint), provider.ErrTransport, err))
		}
		if errors.Is(err, io.EOF) {
			if payload, ok := strings.CutPrefix(line, "data:"); ok {
				// A last data line without its newline is whole when
				// what it carries is.
				if payload = strings.TrimPrefix(payload, " "); strings.TrimSpace(payload) == "[DONE]" || gjson.Valid(payload) {
					data = append(data, payload)
					line = ""
				}
			}
			if line != "" {
				// A line without its end: the body stopped inside a
				// chunk, which no server ends a reply with.
				return end(provider.Errorf(Name, "%s: SSE stream ended in the middle of a chunk (the connection closed mid-reply): %w", redact(p.endpoint), provider.ErrTransport))
			}
			// A last event without its blank line is whole: take it.
			if done, err := dispatch(); err != nil || done {
				return end(err)
			}
			// The body ended cleanly without [DONE]: the server ended
			// the reply. With a finish reason it said how; without one,
			// the reply was cut.
			ended = finish == ""
			return end(nil)
		}
		switch {
		case line == "":
			if done, err := dispatch(); err != nil || done {
				return end(err)
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// Other fields (event:, id:, retry:) and comments (":") carry
		// nothing we use.
	}
}
