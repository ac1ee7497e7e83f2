package openai_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// TestLlamaServer runs 30 steps in each mode against a real llama.cpp
// llama-server when ART_LLAMA_SERVER names its API root
// (http://127.0.0.1:8080/v1) and ART_LLAMA_MODEL the model it serves;
// ART_LLAMA_CTX is the server's -c (default 4096), and the provider asks
// the server its context too. Whatever the model replies (a random-weight
// model replies nonsense), the run must end at its step limit, in format
// errors or cut replies, never in a provider error, but for the one
// llama-server failure that is the server's (HTTP 500 "does not match the
// expected format" when a grammar-constrained model cannot finish); and
// no request may exceed the context. Skipped when the variables are not
// set.
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
	for _, mode := range ollamaModes {
		t.Run(mode.name, func(t *testing.T) {
			r := runServer(t, base, model, openai.Config{ContextTokens: ctxTokens, MaxTokens: 512, Stream: mode.stream, ToolCall: mode.tool, Retries: 2, ServerContext: true}, 30)
			switch r.res.Status {
			case agent.StatusStepLimit, agent.StatusFormatError, agent.StatusTruncated, agent.StatusFinished:
			case agent.StatusProviderError:
				if msg := r.res.Err.Error(); !strings.Contains(msg, "HTTP 500") || !strings.Contains(msg, "does not match the expected format") {
					t.Fatalf("a provider error ended the run: %v", r.res.Err)
				}
			default:
				t.Fatalf("run ended %s: %v", r.res.Status, r.res.Err)
			}
			r.within(t, 512, ctxTokens)
		})
	}
}
