package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/art-runtime/art/lib/agent/provider"
)

// fitState is what the provider knows of the context it must fit, learnt
// as the run goes. Guarded by Provider.mu.
type fitState struct {
	probed   bool
	reprobed bool
	server   serverContext
	// context is the tokens prompt and reply must fit together: the
	// smaller of ContextTokens and the server's, lowered after a silent
	// truncation.
	context int
	// ratio is the fewest bytes per token seen in a reply's usage
	// (prompt bytes over prompt_tokens); 0 before any.
	ratio float64
	// widest is the most bytes per token seen in a reply's usage that
	// was not a truncation; 0 before any.
	widest float64
	// blind is set when usage proved meaningless (a request that cannot
	// have been truncated reported far fewer tokens than any tokenizer
	// makes of its text): no truncation is inferred from it.
	blind bool
}

// Fitting margins. The budget keeps budgetMargin of what the estimate
// allows: text unlike what the run has shown can take more tokens per
// byte. A request whose bytes per token (prompt bytes over prompt_tokens)
// is over truncatedAbove times the most seen before in the run was cut by
// the server: one tokenizer on one run's kind of text does not vary that
// much, while a dropped 4 KB message moves it far more.
const (
	budgetMargin   = 0.95
	truncatedAbove = 1.3
	// maxBytesPerToken is more than any tokenizer averages on what an
	// agent sends; usage saying more is not counting the prompt.
	maxBytesPerToken = 8
)

// bytesPerToken is the ratio estimates use now: the learnt one, but never
// more than provider.BytesPerToken (a run's text varies; learning only
// ever makes the estimate more careful).
func (f *fitState) bytesPerToken() float64 {
	if f.ratio > 0 && f.ratio < provider.BytesPerToken {
		return f.ratio
	}
	return provider.BytesPerToken
}

// probeOnce asks the server its context before the first request (with
// Config.ServerContext) and fits to it when it is smaller; it returns the
// note that says so.
func (p *Provider) probeOnce(ctx context.Context) []string {
	if !p.cfg.ServerContext {
		return nil
	}
	p.mu.Lock()
	done := p.fit.probed
	p.fit.probed = true
	p.mu.Unlock()
	if done {
		return nil
	}
	return p.adopt(p.probeContext(ctx))
}

// adopt fits to what a probe found when it is smaller than the context
// now in force.
func (p *Provider) adopt(sc serverContext) []string {
	if sc.tokens <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fit.server = sc
	if sc.tokens >= p.fit.context {
		return nil
	}
	p.fit.context = sc.tokens
	note := fmt.Sprintf("context: %s; fitting to %d tokens instead of %d", sc.describe(), sc.tokens, p.cfg.ContextTokens)
	if sc.tokens < p.cfg.MaxTokens+MinPromptTokens {
		note += fmt.Sprintf(" (less than the reply's %d tokens and %d for the conversation: expect the conversation to be cut hard)", p.cfg.MaxTokens, MinPromptTokens)
	}
	return []string{note}
}

// contextNow is the context in force and the bytes per token estimates use.
func (p *Provider) contextNow() (int, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fit.context, p.fit.bytesPerToken()
}

// learn reads a reply's usage: bytes per token, a prompt the server
// truncated silently (then it fits to a smaller context and says so: the
// caller sends again), a prompt and reply over the served context, a
// reply longer than the token limit allowed (then it switches the
// token-limit field once, when it was chosen automatically, or warns).
// sent is the prompt's bytes as counted for the ratio. A request without
// history is never taken as truncated (servers that truncate keep the
// system message and the latest one, which is all it has): its usage
// calibrates, and usage that is implausible there is not trusted for
// truncation later.
func (p *Provider) learn(ctx context.Context, sent int, reply *provider.Reply, first bool) (notes []string, truncated bool) {
	if reply.Usage == nil {
		return nil, false
	}
	in, out := reply.Usage.InputTokens, reply.Usage.OutputTokens
	p.mu.Lock()
	field := p.field
	if out > int64(p.cfg.MaxTokens) {
		other := FieldMaxTokens
		if field == FieldMaxTokens {
			other = FieldMaxCompletionTokens
		}
		if p.autoField {
			p.field, p.autoField = other, false
			notes = append(notes, fmt.Sprintf("token limit: the server ignored %s (a reply of %d tokens, %d allowed): sending %s from now on", field, out, p.cfg.MaxTokens, other))
		} else {
			notes = append(notes, fmt.Sprintf("token limit: the server ignored %s (a reply of %d tokens, %d allowed); set the other field name if it reads that one", field, out, p.cfg.MaxTokens))
		}
	}
	if in <= 0 || sent <= 0 {
		p.mu.Unlock()
		return notes, false
	}
	r := float64(sent) / float64(in)
	if first && r > maxBytesPerToken {
		p.fit.blind = true
	}
	if p.fit.blind {
		p.mu.Unlock()
		return notes, false
	}
	widest := p.fit.widest
	if widest == 0 {
		widest = provider.BytesPerToken
	}
	estimate := float64(sent) / widest
	if !first && r > truncatedAbove*widest && !refuses(p.fit.server.kind) {
		kept, old := in, p.fit.context
		reprobe := p.cfg.ServerContext
		p.mu.Unlock()
		if reprobe {
			// The model is loaded now: Ollama's /api/ps says its context.
			p.adopt(p.probeContext(ctx))
		}
		p.mu.Lock()
		if p.fit.context >= old {
			p.fit.context = max(old/2, p.cfg.MaxTokens+MinPromptTokens)
		}
		now := p.fit.context
		p.mu.Unlock()
		if now >= old {
			return append(notes, fmt.Sprintf("context: the server counted %d of about %.0f prompt tokens (it may have truncated the prompt silently) and the context cannot go below %d", kept, estimate, now)), false
		}
		return append(notes, fmt.Sprintf("context: the server kept %d of about %.0f prompt tokens: it truncated the prompt silently; fitting to %d tokens instead of %d and sending again", kept, estimate, now, old)), true
	}
	if p.fit.ratio == 0 || r < p.fit.ratio {
		p.fit.ratio = r
	}
	p.fit.widest = max(p.fit.widest, r)
	if served := p.fit.server.tokens; served > 0 && in+int64(p.cfg.MaxTokens) > int64(served) {
		notes = append(notes, fmt.Sprintf("context: a prompt of %d tokens and a reply of up to %d exceed the served %d; estimating %.2f bytes per token from now on", in, p.cfg.MaxTokens, served, r*budgetMargin))
		p.fit.ratio = math.Min(p.fit.ratio, r*budgetMargin)
	}
	exact, kind := p.fit.server.exact, p.fit.server.kind
	again := p.cfg.ServerContext && !exact && kind == serverOllama && !p.fit.reprobed
	p.fit.reprobed = p.fit.reprobed || again
	p.mu.Unlock()
	if again {
		// Ollama reports the context in force only once the model is
		// loaded, which the first reply did.
		notes = append(notes, p.adopt(p.probeContext(ctx))...)
	}
	return notes, false
}

// promptBytes counts the bytes of msgs the way usage is learnt from: the
// text of every message and tool call, and the tool schema, which a server
// renders into the prompt, in tool mode.
func (p *Provider) promptBytes(msgs []message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(toolArgs(m))
	}
	if p.cfg.ToolCall {
		b, _ := json.Marshal(p.schemaPart())
		n += len(b)
	}
	return n
}
