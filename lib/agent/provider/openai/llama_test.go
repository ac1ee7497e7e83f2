package openai_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// TestLlamaServer runs 30 steps against a real llama.cpp llama-server
// when ART_LLAMA_SERVER names its API root (http://127.0.0.1:8080/v1) and
// ART_LLAMA_MODEL the model it serves; ART_LLAMA_CTX is the server's -c
// (default 4096). Whatever the model replies (a random-weight model
// replies nonsense), no request may overflow the context or be refused:
// the run ends at its step limit or in a format error, never with a 4xx
// or a context overflow. Skipped when the variables are not set.
func TestLlamaServer(t *testing.T) {
	base, model := os.Getenv("ART_LLAMA_SERVER"), os.Getenv("ART_LLAMA_MODEL")
	if base == "" || model == "" {
		t.Skip("set ART_LLAMA_SERVER and ART_LLAMA_MODEL to run against llama-server")
	}
	ctxTokens := 4096
	if v := os.Getenv("ART_LLAMA_CTX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ART_LLAMA_CTX: %v", err)
		}
		ctxTokens = n
	}
	for _, mode := range []struct {
		name         string
		stream, tool bool
	}{{"json_schema", false, false}, {"json_schema stream", true, false}, {"tool call", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(ws+"/big.go", []byte(strings.Repeat("package main // filler line of source text\n", 400)), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := openai.New(openai.Config{BaseURL: base, Model: model, ContextTokens: ctxTokens, MaxTokens: 512, Stream: mode.stream, ToolCall: mode.tool, Retries: 2, Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			cfg := agent.Config{Task: "Read big.go, then finish.", Workspace: ws, Verify: []string{"true"}, MaxSteps: 30, MaxFormatErrors: 30, Provider: "openai"}
			res, err := agent.Run(context.Background(), cfg, p, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s after %d steps: %v (usage %+v)", res.Status, res.Steps, res.Err, res.Usage)
			// llama-server answers HTTP 500 when a grammar-constrained
			// random model cannot finish ("does not match the expected
			// format"): the server's failure, not the request's. A 4xx
			// or a context overflow is the request's.
			if res.Status == agent.StatusProviderError && res.Err != nil {
				if msg := res.Err.Error(); strings.Contains(msg, "HTTP 4") || strings.Contains(msg, "context") {
					t.Fatalf("a request was refused: %v", res.Err)
				}
			}
		})
	}
}
