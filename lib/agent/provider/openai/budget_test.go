package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// A 30-step run against a server with a 4,096-token context never sends a
// request over its budget, though every step reads a 12 KB file and one
// reply is 16,000 characters cut off at the token limit; that reply is
// never sent back in full. The loop, the provider and a real HTTP server,
// as in a run against llama-server.
func TestThirtyStepsWithinContext(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("func f() { return 42 } // a line of Go source\n", 270) // ~12 KB
	if err := os.WriteFile(filepath.Join(ws, "big.go"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	stuck := `{"action":"finish","summary":"` + strings.Repeat("é", 8000) // 16,000 bytes, inside a string
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		reply, finish := `{"action":"read_file","path":"big.go","program":null,"args":null,"old":null,"new":null,"summary":null,"reason":null}`, "stop"
		switch {
		case n == 3:
			reply, finish = stuck, "length"
		case n%5 == 0:
			reply = `{"action":"replace_text","path":"big.go","old":"not there","new":"x","program":null,"args":null,"summary":null,"reason":"try"}`
		}
		out, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": map[string]any{"role": "assistant", "content": reply}}}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
	defer srv.Close()
	const contextTokens, maxTokens = 4096, 1024
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", ContextTokens: contextTokens, MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := agent.Config{Task: "read big.go", Workspace: ws, Verify: []string{"true"}, MaxSteps: 30, Provider: "openai"}
	res, err := agent.Run(context.Background(), cfg, p, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusStepLimit || res.Steps != 30 || len(bodies) != 30 {
		t.Fatalf("result %+v after %d requests", res, len(bodies))
	}
	budget := p.PromptBudget()
	for i, b := range bodies {
		doc := gjson.ParseBytes(b)
		tokens, textBytes := 0, 0
		for _, m := range doc.Get("messages").Array() {
			c := m.Get("content").String()
			tokens += provider.EstimateTokens(c) + provider.MessageOverheadTokens
			textBytes += len(c)
		}
		if tokens > budget {
			t.Errorf("request %d: about %d tokens of messages; budget %d", i+1, tokens, budget)
		}
		if textBytes > (contextTokens-maxTokens)*provider.BytesPerToken {
			t.Errorf("request %d: %d bytes of messages exceed %d tokens at %d bytes per token", i+1, textBytes, contextTokens-maxTokens, provider.BytesPerToken)
		}
		if i >= 3 && bytes.Contains(b, []byte(strings.Repeat("é", 1000))) {
			t.Errorf("request %d re-sends the cut-off reply", i+1)
		}
		if i == 29 && !strings.Contains(doc.Get("messages.1.content").String(), "Earlier steps, summarised") {
			t.Errorf("request 30 has no summary of the earliest steps")
		}
		if !strings.Contains(doc.Get("messages.@reverse.0.content").String(), fmt.Sprintf("Step %d of 30", i+1)) {
			t.Errorf("request %d does not end with its step note", i+1)
		}
	}
}
