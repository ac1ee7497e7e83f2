package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/provider"
)

const decided = `{"action":"verify","program":null,"args":null,"path":null,"old":null,"new":null,"summary":null,"reason":null}`

// completion is a whole reply with usage.
func completion(prompt, completionTokens int) string {
	b, _ := json.Marshal(decided)
	return fmt.Sprintf(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, b, prompt, completionTokens, prompt+completionTokens)
}

// The context is asked from the server, whichever kind it is, and the
// provider fits to it when it is smaller than the one configured; a server
// that answers none of the probes leaves the configured context.
func TestServerContextProbe(t *testing.T) {
	for name, c := range map[string]struct {
		paths map[string]string
		want  int
		note  string
	}{
		"vLLM": {paths: map[string]string{"/v1/models": `{"object":"list","data":[{"id":"other","max_model_len":100000},{"id":"m","object":"model","max_model_len":3000}]}`},
			want: 3000, note: "vLLM serves the model with 3000 tokens of context (/v1/models max_model_len); fitting to 3000 tokens instead of 16384"},
		"llama-server": {paths: map[string]string{"/props": `{"default_generation_settings":{"n_ctx":2500,"params":{}},"total_slots":1}`},
			want: 2500, note: "llama-server serves the model with 2500 tokens"},
		"Ollama num_ctx": {paths: map[string]string{"/api/show": `{"parameters":"num_ctx                        2048\nstop \"<|end|>\"","model_info":{"general.architecture":"llama","llama.context_length":8192}}`, "/api/ps": `{"models":[]}`},
			want: 2048, note: "Ollama serves the model with 2048 tokens of context (/api/show num_ctx)"},
		"Ollama default": {paths: map[string]string{"/api/show": `{"parameters":"stop x","model_info":{"llama.context_length":131072}}`},
			want: 4096, note: "Ollama's default context"},
		"Ollama trained": {paths: map[string]string{"/api/show": `{"model_info":{"llama.context_length":2048}}`},
			want: 2048, note: "/api/show context_length"},
		"Ollama loaded": {paths: map[string]string{"/api/show": `{"parameters":"num_ctx 8192","model_info":{"llama.context_length":8192}}`, "/api/ps": `{"models":[{"name":"m:latest","model":"m:latest","context_length":1536}]}`},
			want: 1536, note: "(/api/ps context_length)"},
		"larger than configured": {paths: map[string]string{"/props": `{"default_generation_settings":{"n_ctx":65536}}`}, want: 16384},
		"silent":                 {want: 16384},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			p := server(t, Config{ServerContext: true, Model: "m", MaxTokens: 256}, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				asked = append(asked, r.Method+" "+r.URL.Path)
				mu.Unlock()
				if r.URL.Path == "/v1/chat/completions" {
					io.WriteString(w, completion(0, 5))
					return
				}
				if r.URL.Path == "/api/show" {
					b, _ := io.ReadAll(r.Body)
					if gjson.GetBytes(b, "model").String() != "m" {
						http.Error(w, "model?", http.StatusBadRequest)
						return
					}
				}
				if body, ok := c.paths[r.URL.Path]; ok {
					io.WriteString(w, body)
					return
				}
				http.NotFound(w, r)
			})
			reply, err := p.Decide(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := p.contextNow(); got != c.want {
				t.Fatalf("context %d; want %d (asked %v)", got, c.want, asked)
			}
			notes := strings.Join(reply.Notes, "\n")
			if c.note == "" && notes != "" || !strings.Contains(notes, c.note) {
				t.Fatalf("notes %q; want %q", notes, c.note)
			}
			// Asked once: a second call probes nothing.
			n := len(asked)
			if _, err := p.Decide(context.Background(), request()); err != nil {
				t.Fatal(err)
			}
			if len(asked) != n+1 {
				t.Fatalf("second call asked %v", asked[n:])
			}
		})
	}
}

// truncatingServer answers like Ollama: it counts a prompt's tokens (one
// per bytesPerToken bytes of message text, and 4 per message), drops the
// oldest messages but the system one and the latest until it fits ctx,
// and reports what it kept as prompt_tokens, without a word.
type truncatingServer struct {
	ctx           int
	bytesPerToken float64
	mu            sync.Mutex
	truncated     []bool // per request
	prompt        []int
}

func (s *truncatingServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	msgs := gjson.GetBytes(b, "messages").Array()
	tokens := func(ms []gjson.Result) int {
		n := 0
		for _, m := range ms {
			n += int(float64(len(m.Get("content").String()))/s.bytesPerToken) + 4
		}
		return n
	}
	kept, cut := msgs, false
	for len(kept) > 2 && tokens(kept) > s.ctx {
		kept = append([]gjson.Result{msgs[0]}, kept[2:]...)
		cut = true
	}
	s.mu.Lock()
	s.truncated = append(s.truncated, cut)
	s.prompt = append(s.prompt, tokens(kept))
	s.mu.Unlock()
	io.WriteString(w, completion(tokens(kept), 40))
}

// history is n earlier steps, each with an observation of size bytes.
func history(n, size int) []provider.Turn {
	var h []provider.Turn
	for i := 1; i <= n; i++ {
		h = append(h, provider.Turn{Step: i, Reply: `{"action":"read_file","path":"big.go"}`, Outcome: "observation",
			Observation: strings.Repeat(fmt.Sprintf("line %d of big.go, read at step %d\n", i, i), size/32)})
	}
	return h
}

// A server that truncates the prompt silently (Ollama) is caught by its
// usage: the call fits to a smaller context and sends again, says so in a
// note and a recorded attempt, and the request that gets the reply is
// whole. Later calls fit to the smaller context from the start.
func TestSilentTruncationRefits(t *testing.T) {
	srv := &truncatingServer{ctx: 2048, bytesPerToken: 3.5}
	p := server(t, Config{ContextTokens: 16384, MaxTokens: 256}, srv.handle)
	first := request()
	first.History = nil
	if _, err := p.Decide(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Step, req.History = 12, history(11, 4000)
	reply, err := p.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	last := len(srv.truncated) - 1
	if srv.truncated[last] || srv.prompt[last]+256 > srv.ctx {
		t.Fatalf("the request that got the reply was truncated (%v) or over the context (%v tokens); notes %q", srv.truncated, srv.prompt, reply.Notes)
	}
	if len(reply.Retries) == 0 || !strings.Contains(reply.Retries[0].Error, "it truncated the prompt silently; fitting to 8192 tokens instead of 16384") {
		t.Fatalf("retries %+v", reply.Retries)
	}
	if !strings.Contains(strings.Join(reply.Notes, "\n"), "truncated the prompt silently") {
		t.Fatalf("notes %q", reply.Notes)
	}
	n := len(srv.truncated)
	req.Step, req.History = 13, history(12, 4000)
	reply, err = p.Decide(context.Background(), req)
	if err != nil || len(reply.Retries) != 0 || len(srv.truncated) != n+1 || srv.truncated[n] {
		t.Fatalf("the next call: %+v, %v; truncated %v", reply, err, srv.truncated[n:])
	}
}

// Usage that cannot be true of a request without history (a fake or a
// server that does not count) is not taken as a sign of truncation later.
func TestImplausibleUsageIsNotTruncation(t *testing.T) {
	calls := 0
	p := server(t, Config{ContextTokens: 16384, MaxTokens: 256}, func(w http.ResponseWriter, r *http.Request) {
		calls++
		io.WriteString(w, completion(100, 10))
	})
	first := request()
	first.History = nil
	for _, req := range []*provider.Request{first, request()} {
		reply, err := p.Decide(context.Background(), req)
		if err != nil || len(reply.Retries) != 0 || len(reply.Notes) != 0 {
			t.Fatalf("reply %+v, %v", reply, err)
		}
	}
	if calls != 2 {
		t.Fatalf("%d calls", calls)
	}
}

// Bytes per token are learnt from usage, downward only: a tokenizer that
// makes more tokens than 3 bytes each shrinks what the budget lets in.
func TestBytesPerTokenLearnt(t *testing.T) {
	srv := &truncatingServer{ctx: 1 << 30, bytesPerToken: 2}
	p := server(t, Config{ContextTokens: 8192, MaxTokens: 256}, srv.handle)
	before := p.PromptBudget()
	first := request()
	first.History = nil
	if _, err := p.Decide(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	after := p.PromptBudget()
	if _, bpt := p.contextNow(); bpt >= 2.1 || after >= before*3/4 {
		t.Fatalf("bytes per token %.2f, budget %d then %d", bpt, before, after)
	}
	srv2 := &truncatingServer{ctx: 1 << 30, bytesPerToken: 6}
	p2 := server(t, Config{ContextTokens: 8192, MaxTokens: 256}, srv2.handle)
	if _, err := p2.Decide(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if _, bpt := p2.contextNow(); bpt != provider.BytesPerToken {
		t.Fatalf("bytes per token %.2f after a 6-byte tokenizer; want it kept at %d", bpt, provider.BytesPerToken)
	}
}

// A reply longer than the token limit allowed says the server ignored the
// field: an automatically chosen field switches once; a configured one is
// kept, with a note every time.
func TestTokenLimitIgnored(t *testing.T) {
	for _, field := range []string{"", FieldMaxTokens} {
		t.Run("field="+field, func(t *testing.T) {
			var bodies []string
			p := server(t, Config{TokenField: field, MaxTokens: 100}, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, string(b))
				io.WriteString(w, completion(500, 5000))
			})
			for range 2 {
				reply, err := p.Decide(context.Background(), request())
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(strings.Join(reply.Notes, "\n"), "the server ignored max_") {
					t.Fatalf("notes %q", reply.Notes)
				}
			}
			second := gjson.Get(bodies[1], FieldMaxCompletionTokens).Int()
			if field == "" && (second != 100 || gjson.Get(bodies[1], FieldMaxTokens).Exists()) {
				t.Fatalf("auto field did not switch: %s", bodies[1][:200])
			}
			if field != "" && gjson.Get(bodies[1], FieldMaxTokens).Int() != 100 {
				t.Fatalf("configured field switched: %s", bodies[1][:200])
			}
		})
	}
}
