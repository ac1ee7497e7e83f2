package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/agent/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secretKey = "sk-test-THIS-MUST-NEVER-APPEAR"

func request() *provider.Request {
	r := provider.NewRequest()
	r.Task, r.Step, r.MaxSteps = "fix the test", 2, 30
	r.Allow, r.Verify = []string{"go"}, []string{"go", "test", "./..."}
	r.History = []provider.Turn{{Step: 1, Reply: `{"action":"read_file","path":"a.go"}`, Observation: "a.go (3 bytes):\nabc"}}
	return r
}

// server starts a loopback server whose handler is h, and a provider
// pointed at it.
func server(t *testing.T, cfg Config, h http.HandlerFunc) *Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "qwen2.5-coder"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A chat.completion as llama.cpp's server returns it (timings included).
const wholeReply = `{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"{\"action\":\"verify\",\"reason\":\"check\"}"}}],"created":1764470000,"model":"qwen2.5-coder","system_fingerprint":"b4800-abc","object":"chat.completion","usage":{"completion_tokens":11,"prompt_tokens":412,"total_tokens":423},"id":"chatcmpl-7xK2","timings":{"prompt_n":412,"prompt_ms":91.2,"predicted_n":11,"predicted_ms":140.9}}`

func TestWhole(t *testing.T) {
	var got []byte
	var auth string
	p := server(t, Config{APIKey: secretKey}, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong endpoint "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		auth = r.Header.Get("Authorization")
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, wholeReply)
	})
	reply, err := p.Decide(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"action":"verify","reason":"check"}` || reply.Usage == nil || *reply.Usage != (provider.Usage{InputTokens: 412, OutputTokens: 11, TotalTokens: 423}) || reply.Latency <= 0 {
		t.Fatalf("reply %+v usage %+v", reply, reply.Usage)
	}
	if auth != "Bearer "+secretKey {
		t.Errorf("Authorization %q", auth)
	}
	body := gjson.ParseBytes(got)
	checks := map[string]string{
		"model":                                   "qwen2.5-coder",
		"stream":                                  "false",
		"response_format.type":                    "json_schema",
		"response_format.json_schema.name":        "decision",
		"response_format.json_schema.strict":      "true",
		"response_format.json_schema.schema.type": "object",
		"messages.#":                              "4",
		"messages.0.role":                         "system",
		"messages.1.role":                         "user",
		"messages.2.role":                         "assistant",
		"messages.2.content":                      `{"action":"read_file","path":"a.go"}`,
		"messages.3.role":                         "user",
		"response_format.json_schema.schema.required.#":           "8",
		"response_format.json_schema.schema.additionalProperties": "false",
		"max_tokens": "2048",
	}
	for path, want := range checks {
		if v := body.Get(path).String(); v != want {
			t.Errorf("request %s = %q; want %q", path, v, want)
		}
	}
	if body.Get("stream_options").Exists() {
		t.Error("stream_options sent without streaming")
	}
	last := body.Get("messages.3.content").String()
	if !strings.HasPrefix(last, "Observation of step 1:\na.go (3 bytes):\nabc") || !strings.Contains(last, "Step 2 of 30") {
		t.Errorf("last message %q", last)
	}
	if bytes.Contains(got, []byte(secretKey)) {
		t.Error("the API key is in the request body")
	}
}

// chunk is one chat.completion.chunk as OpenAI and llama.cpp send it.
func chunk(delta string, finish string) string {
	d := map[string]any{}
	if delta != "" {
		d["content"] = delta
	}
	var fr any
	if finish != "" {
		fr = finish
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-7xK2", "object": "chat.completion.chunk", "created": 1764470000, "model": "qwen2.5-coder",
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": fr}},
		"usage":   nil,
	})
	return "data: " + string(b) + "\n\n"
}

const usageChunk = `data: {"id":"chatcmpl-7xK2","object":"chat.completion.chunk","created":1764470000,"model":"qwen2.5-coder","choices":[],"usage":{"prompt_tokens":412,"completion_tokens":9,"total_tokens":421}}` + "\n\n"

func TestStream(t *testing.T) {
	pieces := []string{`{"action":`, `"read_file",`, `"path":"a.go"}`}
	tests := []struct {
		name      string
		tail      string // after the content chunks
		crlf      bool
		wantUsage bool
	}{
		{name: "usage chunk and DONE", tail: chunk("", "stop") + usageChunk + "data: [DONE]\n\n", wantUsage: true},
		{name: "no usage chunk", tail: chunk("", "stop") + "data: [DONE]\n\n"},
		{name: "DONE without its blank line", tail: chunk("", "stop") + usageChunk + "data: [DONE]", wantUsage: true},
		{name: "CRLF and comments", tail: ": keep-alive\n\n" + chunk("", "stop") + "data: [DONE]\n\n", crlf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			p := server(t, Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
				got, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				s := "data: " + `{"id":"chatcmpl-7xK2","object":"chat.completion.chunk","created":1764470000,"model":"qwen2.5-coder","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}` + "\n\n"
				for _, piece := range pieces {
					s += chunk(piece, "")
				}
				s += tt.tail
				if tt.crlf {
					s = strings.ReplaceAll(s, "\n", "\r\n")
				}
				io.WriteString(w, s)
			})
			reply, err := p.Decide(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != strings.Join(pieces, "") {
				t.Fatalf("text %q", reply.Text)
			}
			if tt.wantUsage != (reply.Usage != nil) || (tt.wantUsage && reply.Usage.TotalTokens != 421) {
				t.Fatalf("usage %+v; want usage %v", reply.Usage, tt.wantUsage)
			}
			if b := gjson.ParseBytes(got); b.Get("stream").String() != "true" || b.Get("stream_options.include_usage").String() != "true" {
				t.Errorf("stream request body %s", got)
			}
		})
	}
}

// notifyWriter closes first when the first byte arrives.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.first) })
	return w.buf.Write(p)
}

// Deltas reach StreamTo while the server is still sending: the server
// waits for the first delta to be forwarded before it sends the rest.
func TestStreamForwardsDeltasAsTheyArrive(t *testing.T) {
	nw := &notifyWriter{first: make(chan struct{})}
	p := server(t, Config{Stream: true, StreamTo: nw}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"action":`, ""))
		w.(http.Flusher).Flush()
		select {
		case <-nw.first:
		case <-time.After(10 * time.Second):
			return // the delta was not forwarded live: the test fails below
		}
		io.WriteString(w, chunk(`"verify"}`, "stop")+"data: [DONE]\n\n")
	})
	reply, err := p.Decide(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"action":"verify"}` {
		t.Fatalf("text %q", reply.Text)
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.buf.String() != `{"action":"verify"}`+"\n" {
		t.Fatalf("forwarded %q", nw.buf.String())
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		handler http.HandlerFunc
		is      error
		msg     string
	}{
		{"http 500", Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"code":500,"message":"model not loaded","type":"server_error"}}`)
		}, nil, "HTTP 500: model not loaded"},
		{"http 401 echoing the key", Config{APIKey: secretKey}, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"invalid key"}}`)
		}, nil, "HTTP 401: invalid key"},
		{"not json", Config{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>proxy error</html>")
		}, provider.ErrProtocol, "not JSON"},
		{"no content", Config{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[]}`)
		}, provider.ErrProtocol, "no choices[0].message.content"},
		{"error in body", Config{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"error":"context length exceeded"}`)
		}, nil, "context length exceeded"},
		{"oversized body", Config{MaxReplyBytes: 1000}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[{"message":{"content":"`+strings.Repeat("x", 5000)+`"}}]}`)
		}, provider.ErrTooLarge, "more than 1000 bytes"},
		{"oversized stream content", Config{MaxReplyBytes: 1000, Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 200; i++ {
				io.WriteString(w, chunk(strings.Repeat("y", 50), ""))
			}
		}, provider.ErrTooLarge, "bytes of content"},
		{"oversized stream framing", Config{MaxReplyBytes: 100, Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 200; i++ {
				io.WriteString(w, ": padding padding padding padding\n")
			}
		}, provider.ErrTooLarge, "stream longer than 1600 bytes"},
		{"bad stream chunk", Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {not json\n\n")
		}, provider.ErrProtocol, "stream chunk is not JSON"},
		{"error in stream", Config{Stream: true}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk("x", "")+`data: {"error":{"message":"out of memory"}}`+"\n\n")
		}, nil, "server error in stream: out of memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := server(t, tt.cfg, tt.handler)
			_, err := p.Decide(context.Background(), request())
			if err == nil || !strings.Contains(err.Error(), tt.msg) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("error %v; want %v containing %q", err, tt.is, tt.msg)
			}
			if strings.Contains(err.Error(), secretKey) {
				t.Fatal("the API key is in an error message")
			}
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Provider != Name {
				t.Fatalf("error %v is not a provider error", err)
			}
		})
	}
}

// hang is a handler that sends headers (and optionally a first chunk) and
// then waits for the client to go away.
func hang(stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice the client leaving.
		_, _ = io.Copy(io.Discard, r.Body)
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk(`{"action":`, ""))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}
}

func TestTimeout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			p := server(t, Config{Timeout: 200 * time.Millisecond, Stream: stream}, hang(stream))
			start := time.Now()
			_, err := p.Decide(context.Background(), request())
			if !errors.Is(err, provider.ErrTimeout) || !strings.Contains(err.Error(), "timed out after 200ms") {
				t.Fatalf("error %v; want ErrTimeout", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("timeout took %v", d)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			p := server(t, Config{Stream: stream}, hang(stream))
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(150*time.Millisecond, func() { cancel(errors.New("interrupted by SIGINT")) })
			start := time.Now()
			_, err := p.Decide(ctx, request())
			if err == nil || errors.Is(err, provider.ErrTimeout) || !strings.Contains(err.Error(), "interrupted by SIGINT") {
				t.Fatalf("error %v; want the cancellation cause", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("cancellation took %v", d)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "", Model: "m"},
		{BaseURL: "ftp://host/v1", Model: "m"},
		{BaseURL: "localhost:8080", Model: "m"},
		{BaseURL: "http://127.0.0.1:8080/v1"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	_, err := New(Config{BaseURL: "ftp://user:hunter2@host/v1", Model: "m"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("URL password in error: %v", err)
	}
}

// FuzzStream feeds arbitrary bytes as an SSE body: no panic, and every
// failure is a provider error.
func FuzzStream(f *testing.F) {
	f.Add([]byte(chunk(`{"a":1}`, "") + usageChunk + "data: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[]}\r\n\r\ndata: [DONE]"))
	f.Add([]byte("data:\ndata: x\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := &Provider{cfg: Config{MaxReplyBytes: 1 << 12}}
		reply, err := p.readStream(bytes.NewReader(body))
		if err != nil {
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a provider error", err)
			}
			return
		}
		if int64(len(reply.Text)) > 1<<12 {
			t.Fatalf("text of %d bytes passed the bound", len(reply.Text))
		}
	})
}

var jsonMarshal = json.Marshal
