package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
)

// A reply the server stopped at max_tokens is marked Truncated, whole and
// streamed, with the text that did arrive.
func TestTruncated(t *testing.T) {
	cut := `{"action":"finish","summary":"` + strings.Repeat("a", 200)
	t.Run("whole", func(t *testing.T) {
		p := server(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":`+jsonString(cut)+`}}],"usage":{"prompt_tokens":400,"completion_tokens":2048}}`)
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || !reply.Truncated || reply.Text != cut {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
	t.Run("stream", func(t *testing.T) {
		p := server(t, Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk(cut[:20], "")+chunk(cut[20:], "")+chunk("", "length")+usageChunk+"data: [DONE]\n\n")
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || !reply.Truncated || reply.Text != cut {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
	t.Run("stop is not truncated", func(t *testing.T) {
		p := server(t, Config{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, wholeReply) })
		reply, err := p.Decide(context.Background(), request())
		if err != nil || reply.Truncated {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
}

func jsonString(s string) string {
	b, _ := jsonMarshal(s)
	return string(b)
}

// A stream the server ends cleanly without [DONE] is a reply: complete
// when it carried a finish reason, Ended (a cut reply) when it did not.
// Only a body that stops inside a chunk, or a connection that breaks, is a
// transport failure naming the endpoint, never a (format-error) reply.
func TestStreamCut(t *testing.T) {
	head := `{"action":"read_file",`
	for name, c := range map[string]struct {
		tail, text string
		ended      bool
	}{
		"no DONE after finish": {tail: chunk("", "stop") + usageChunk, text: head},
		"no DONE, no finish":   {tail: "", text: head, ended: true},
		"event without blank":  {tail: "data: " + `{"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n", text: head + "x", ended: true},
		"line without newline": {tail: "data: " + `{"choices":[{"index":0,"delta":{"content":"x"}}]}`, text: head + "x", ended: true},
		"mid chunk":            {tail: `data: {"id":"chatcmpl-7xK2","choices":[{"index":0,"delta":{"content":"\"pa`},
	} {
		t.Run(name, func(t *testing.T) {
			p := server(t, Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, chunk(head, "")+c.tail)
			})
			reply, err := p.Decide(context.Background(), request())
			if c.text == "" {
				if !errors.Is(err, provider.ErrTransport) || !strings.Contains(err.Error(), "/v1/chat/completions: SSE stream ended in the middle of a chunk") {
					t.Fatalf("error %v; want ErrTransport naming the stream", err)
				}
				return
			}
			if err != nil || reply.Text != c.text || reply.Ended != c.ended || reply.Truncated {
				t.Fatalf("reply %+v, %v; want text %q ended %t", reply, err, c.text, c.ended)
			}
		})
	}
	// The connection breaking mid-reply (no final zero-length chunk) is
	// what "connection closed" means.
	t.Run("connection closed", func(t *testing.T) {
		p := server(t, Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk(head, ""))
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		_, err := p.Decide(context.Background(), request())
		if !errors.Is(err, provider.ErrTransport) || !strings.Contains(err.Error(), "read stream") {
			t.Fatalf("error %v; want ErrTransport reading the stream", err)
		}
	})
	// A whole reply with finish_reason null is Ended, with its text.
	t.Run("whole, finish_reason null", func(t *testing.T) {
		p := server(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":null,"message":{"role":"assistant","content":`+jsonString(head)+`}}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`)
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || !reply.Ended || reply.Text != head {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
	t.Run("tool mode, empty message", func(t *testing.T) {
		p := server(t, Config{ToolCall: true}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":-62135596800,"model":"","choices":[{"index":0,"message":{"role":"","content":""},"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`)
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || !reply.Ended || reply.Text != "" {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
}

// max_tokens is always sent, under the name the server reads.
func TestTokenField(t *testing.T) {
	for _, tt := range []struct {
		base, field, want string
		max               int
	}{
		{"http://127.0.0.1:8080/v1", "", "max_tokens", 2048},
		{"https://api.openai.com/v1", "", "max_completion_tokens", 2048},
		{"http://127.0.0.1:8080/v1", FieldMaxCompletionTokens, "max_completion_tokens", 300},
	} {
		p, err := New(Config{BaseURL: tt.base, Model: "m", TokenField: tt.field, MaxTokens: tt.max})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Body(request())
		if err != nil {
			t.Fatal(err)
		}
		doc := gjson.ParseBytes(b)
		other := FieldMaxTokens
		if tt.want == FieldMaxTokens {
			other = FieldMaxCompletionTokens
		}
		if doc.Get(tt.want).Int() != int64(tt.max) || doc.Get(other).Exists() {
			t.Errorf("%s field %q: body %s", tt.base, tt.field, b)
		}
		p.Close()
	}
	for _, cfg := range []Config{
		{MaxTokens: -1}, {TokenField: "n_predict"}, {ContextTokens: 2048, MaxTokens: 2048}, {Retries: -1}, {Retries: 11},
	} {
		cfg.BaseURL, cfg.Model = "http://127.0.0.1:1/v1", "m"
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// Tool-call mode: one function tool with the strict schema, tool_choice
// required; the decision comes back as the call's arguments, whole or in
// streamed fragments; earlier decisions are sent back as tool calls with
// their observations as tool results.
func TestToolCall(t *testing.T) {
	var body []byte
	record := func(r *http.Request) { body, _ = io.ReadAll(r.Body) }
	args := `{"action":"verify","program":null,"args":null,"path":null,"old":null,"new":null,"summary":null,"reason":null}`
	t.Run("whole", func(t *testing.T) {
		p := server(t, Config{ToolCall: true}, func(w http.ResponseWriter, r *http.Request) {
			record(r)
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"decide","arguments":`+jsonString(args)+`}}]}}]}`)
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || reply.Text != args {
			t.Fatalf("reply %+v, %v", reply, err)
		}
		if _, err := provider.DecodeDecision([]byte(reply.Text)); err != nil {
			t.Fatalf("the strict-mode reply does not decode: %v", err)
		}
		doc := gjson.ParseBytes(body)
		for path, want := range map[string]string{
			"tools.#":                                    "1",
			"tools.0.type":                               "function",
			"tools.0.function.name":                      "decide",
			"tools.0.function.strict":                    "true",
			"tools.0.function.parameters.type":           "object",
			"tool_choice":                                "required",
			"parallel_tool_calls":                        "false",
			"messages.2.role":                            "assistant",
			"messages.2.tool_calls.0.id":                 "call_step_1",
			"messages.2.tool_calls.0.function.name":      "decide",
			"messages.2.tool_calls.0.function.arguments": `{"action":"read_file","path":"a.go"}`,
			"messages.3.role":                            "tool",
			"messages.3.tool_call_id":                    "call_step_1",
		} {
			if got := doc.Get(path).String(); got != want {
				t.Errorf("body %s = %q; want %q", path, got, want)
			}
		}
		if doc.Get("response_format").Exists() {
			t.Error("response_format sent in tool mode")
		}
	})
	t.Run("stream", func(t *testing.T) {
		p := server(t, Config{ToolCall: true, Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"decide","arguments":""}}]}}]}`+"\n\n")
			for _, piece := range []string{args[:10], args[10:50], args[50:]} {
				io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(piece)+`}}]}}]}`+"\n\n")
			}
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil || reply.Text != args || reply.Truncated {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	})
	t.Run("another tool is a malformed reply", func(t *testing.T) {
		p := server(t, Config{ToolCall: true}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"rm -rf /\"}"}}]}}]}`)
		})
		reply, err := p.Decide(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if _, derr := provider.DecodeDecision([]byte(reply.Text)); derr == nil || !strings.Contains(reply.Text, `"bash"`) {
			t.Fatalf("reply %q decodes (%v)", reply.Text, derr)
		}
	})
}

// Retries: only 429/502/503/504 and connection failures, only when asked,
// honouring Retry-After, every attempt reported; never other 4xx.
func TestRetries(t *testing.T) {
	type step func(w http.ResponseWriter, r *http.Request)
	status := func(code int, retryAfter string) step {
		return func(w http.ResponseWriter, r *http.Request) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			io.WriteString(w, `{"error":{"message":"busy"}}`)
		}
	}
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, wholeReply) }
	reset := func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	tests := []struct {
		name    string
		retries int
		steps   []step
		calls   int
		wantErr string
		waits   []int64
	}{
		{"503 then ok", 2, []step{status(503, ""), ok}, 2, "", []int64{10}},
		{"429 honours Retry-After", 1, []step{status(429, "1"), ok}, 2, "", []int64{1000}},
		{"502 504 then ok, doubling", 3, []step{status(502, ""), status(504, ""), ok}, 3, "", []int64{10, 20}},
		{"connection reset then ok", 1, []step{reset, ok}, 2, "", []int64{10}},
		{"400 never retried", 3, []step{status(400, ""), ok}, 1, "HTTP 400", nil},
		{"500 not retried", 3, []step{status(500, ""), ok}, 1, "HTTP 500", nil},
		{"no retries by default", 0, []step{status(503, ""), ok}, 1, "HTTP 503", nil},
		{"gives up", 2, []step{status(503, ""), status(503, ""), status(503, ""), ok}, 3, "HTTP 503", []int64{10, 20, 0}},
		{"Retry-After past the timeout", 3, []step{status(429, "3600"), ok}, 1, "would pass the provider timeout", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			p := server(t, Config{Retries: tt.retries, Backoff: 10 * time.Millisecond, Timeout: 20 * time.Second}, func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				io.Copy(io.Discard, r.Body)
				tt.steps[i](w, r)
			})
			reply, err := p.Decide(context.Background(), request())
			if int(n.Load()) != tt.calls {
				t.Errorf("%d calls; want %d", n.Load(), tt.calls)
			}
			var attempts []provider.Attempt
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				attempts = reply.Retries
			} else {
				var pe *provider.Error
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &pe) {
					t.Fatalf("error %v; want %q", err, tt.wantErr)
				}
				attempts = pe.Retries
				if strings.Count(err.Error(), "openai:") != 1 {
					t.Errorf("error %q names the provider more than once", err)
				}
			}
			if len(attempts) != len(tt.waits) {
				t.Fatalf("attempts %+v; want waits %v", attempts, tt.waits)
			}
			for i, a := range attempts {
				if a.Attempt != i+1 || a.WaitMS != tt.waits[i] || a.Error == "" {
					t.Errorf("attempt %d: %+v; want wait %d", i, a, tt.waits[i])
				}
			}
		})
	}
}

// Retries stay inside the provider's timeout: a server that is always
// unavailable ends the call at the timeout, as a timeout.
func TestRetriesWithinTimeout(t *testing.T) {
	p := server(t, Config{Retries: 10, Backoff: 50 * time.Millisecond, Timeout: 300 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
	})
	start := time.Now()
	_, err := p.Decide(context.Background(), request())
	if err == nil || (!errors.Is(err, provider.ErrTimeout) && !strings.Contains(err.Error(), "would pass the provider timeout")) {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// FuzzWhole feeds arbitrary bytes as a whole completion body, in both
// modes: no panic, and every failure is a provider error.
func FuzzWhole(f *testing.F) {
	f.Add([]byte(wholeReply))
	f.Add([]byte(`{"choices":[{"finish_reason":"length","message":{"content":"{\"a"}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"function":{"name":"decide","arguments":"{}"}}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, tools := range []bool{false, true} {
			p := &Provider{cfg: Config{MaxReplyBytes: 1 << 12, ToolCall: tools}}
			_, err := p.readWhole(bytes.NewReader(body))
			var pe *provider.Error
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("error %v is not a provider error", err)
			}
		}
	})
}

// With the field chosen automatically, a 400 that names the other
// token-limit field switches to it, once, and the request is sent again;
// a configured field never switches.
func TestTokenFieldSwitch(t *testing.T) {
	for _, tt := range []struct {
		name, field, refusal string
		calls                int
		ok                   bool
	}{
		{"openai wants max_completion_tokens", "", `Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.`, 2, true},
		{"configured field does not switch", FieldMaxTokens, `Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.`, 1, false},
		{"other 400 does not switch", "", `max_tokens is too large: 9999`, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fields []string
			p := server(t, Config{TokenField: tt.field}, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				doc := gjson.ParseBytes(b)
				if doc.Get("max_tokens").Exists() {
					fields = append(fields, "max_tokens")
					w.WriteHeader(400)
					io.WriteString(w, `{"error":{"message":`+jsonString(tt.refusal)+`,"type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)
					return
				}
				fields = append(fields, "max_completion_tokens")
				io.WriteString(w, wholeReply)
			})
			reply, err := p.Decide(context.Background(), request())
			if len(fields) != tt.calls || (err == nil) != tt.ok {
				t.Fatalf("fields sent %v, error %v", fields, err)
			}
			if tt.ok && (len(reply.Retries) != 1 || !strings.Contains(reply.Retries[0].Error, "HTTP 400")) {
				t.Fatalf("retries %+v", reply.Retries)
			}
			if tt.ok {
				// The switch is remembered.
				if _, err := p.Decide(context.Background(), request()); err != nil || len(fields) != 3 || fields[2] != "max_completion_tokens" {
					t.Fatalf("second call: fields %v, %v", fields, err)
				}
			}
		})
	}
}
