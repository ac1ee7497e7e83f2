package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent/provider"
)

// BenchmarkBody is the cost of one request body at step 31 of a run whose
// every step read a 12 KB file: fitted to a 4,096-token context (Fit,
// summary, cuts) or to a context large enough to send everything, against
// plain json.Marshal of the request (what the exec provider sends) and the
// request hash the loop takes at every step.
func BenchmarkBody(b *testing.B) {
	req := provider.NewRequest()
	req.Task, req.Step, req.MaxSteps, req.Allow, req.Verify = "fix it", 31, 60, []string{"go"}, []string{"go", "test", "./..."}
	obs := strings.Repeat("func f() { return 42 } // a line of Go source, 0.12s\n", 230)
	for i := 1; i <= 30; i++ {
		req.History = append(req.History, provider.NewTurn(i, "", []byte(`{"action":"read_file","path":"big.go"}`), "observation", "", nil, fmt.Sprintf("big.go (%d bytes):\n%s", len(obs), obs)))
	}
	for _, ctx := range []int{4096, 1 << 20} {
		p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", ContextTokens: ctx, MaxTokens: 1024})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("fit-%d", ctx), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := p.Body(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("marshal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hash", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = req.Hash()
		}
	})
}
