// Package provider defines what the agent loop asks a model and what it gets
// back: the Request (task, history, allowlist, verification state), the
// Reply (the decision text exactly as the model wrote it, with token usage
// and latency), the Decision document and its strict decoder, and the
// Provider interface every backend (mock, exec, agy, openai) implements.
//
// A provider returns the decision as text, not as a decoded value: the loop
// decodes every reply with one strict decoder, so a malformed decision is an
// observation sent back to the model (and a format error), never a provider
// failure, and no provider can smuggle in a decision the decoder would
// refuse. A provider error ends the run; there is no hidden retry: a
// provider retries a transient failure only when the operator asked for a
// number of retries, and reports every attempt.
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Provider asks a model for the next decision. Implementations enforce
// their own wall-clock timeout and reply size bound, return promptly when
// ctx is cancelled, and report every failure as an error value.
type Provider interface {
	Decide(ctx context.Context, req *Request) (*Reply, error)
}

// KindRequest is the kind of the document sent to providers.
const KindRequest = "DecisionRequest"

// Request is everything a model is told at one step. It is deterministic
// (no clocks, no durations): a replayed run sends byte-identical requests,
// which is what makes the request hash in a transcript meaningful.
type Request struct {
	jsonx.TypeMeta
	Task     string `json:"task"`
	Step     int    `json:"step"` // 1-based: the step being decided
	MaxSteps int    `json:"max_steps"`
	// Allow lists the programs run_tool may name.
	Allow []string `json:"allow"`
	// Verify is the operator's verification command, shown so the model
	// knows what verify runs; it cannot change it.
	Verify []string `json:"verify"`
	// Debt is true while an edit has not been covered by a passing verify:
	// finish is refused until it is cleared.
	Debt    bool   `json:"debt"`
	History []Turn `json:"history"`
}

// Turn is one earlier step: what the model decided and what it observed.
//
// Reply is the decision in its canonical form (the re-encoded decoded
// decision, not the model's raw text: a model that padded or repeated
// itself is not shown that again at every later step), or, when the reply
// did not decode, the raw text cut head-and-tail to MaxTurnReplyBytes. The
// transcript keeps the raw reply; NewTurn is the one place a Turn is built,
// by the loop and by resume alike, so a resumed run sends the same
// messages. Outcome, Refusal and ExitCode say how the step ended, for the
// summary that replaces the oldest steps when the conversation would
// exceed the model's context (see Fit).
type Turn struct {
	Step        int    `json:"step"`
	Reply       string `json:"reply"`
	Outcome     string `json:"outcome,omitempty"`
	Refusal     string `json:"refusal,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Observation string `json:"observation"`
}

// MaxTurnReplyBytes bounds a malformed reply as it is shown back to the
// model in later requests (head and tail kept).
const MaxTurnReplyBytes = 1024

// NewTurn builds the history entry of a completed step. decision is the
// canonical JSON of the decoded decision, or nil when the reply did not
// decode (then the raw reply is kept, cut to MaxTurnReplyBytes).
func NewTurn(step int, reply string, decision []byte, outcome, refusal string, exitCode *int, observation string) Turn {
	t := Turn{Step: step, Outcome: outcome, Refusal: refusal, Observation: observation}
	if exitCode != nil {
		c := *exitCode
		t.ExitCode = &c
	}
	if len(decision) > 0 {
		t.Reply = string(decision)
	} else {
		t.Reply, _ = HeadTail(reply, MaxTurnReplyBytes)
	}
	return t
}

// NewRequest fills the header.
func NewRequest() *Request { return &Request{TypeMeta: jsonx.Meta(KindRequest)} }

// Hash is "sha256:" and the hex digest of the request's canonical JSON,
// with volatile text in observations masked (see Normalize): two runs that
// differ only in how long a test took, or in a timestamp a tool printed,
// send requests with the same hash, so a recorded run replays as a
// cassette.
func (r *Request) Hash() string {
	n := *r
	n.History = make([]Turn, len(r.History))
	for i, t := range r.History {
		t.Observation = Normalize(t.Observation)
		n.History[i] = t
	}
	b, err := jsonx.Marshal(&n)
	if err != nil {
		panic(fmt.Sprintf("provider: request cannot be encoded: %v", err)) // only strings, ints and bools
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Reply is one answer from a model.
type Reply struct {
	// Text is the decision exactly as the model produced it (the loop
	// decodes it strictly).
	Text string
	// Usage is nil when the provider does not report tokens.
	Usage *Usage
	// Latency is the wall-clock time of the call.
	Latency time.Duration
	// Truncated is true when the server stopped the reply at its token
	// limit (finish_reason "length"): Text is incomplete, and the loop
	// reports the step as truncated instead of as a format error.
	Truncated bool
	// Ended is true when the server ended the reply without saying why:
	// a stream that closed cleanly with no finish reason and no [DONE], or
	// a whole reply whose finish_reason is null (Ollama aborts a
	// generation that repeats one token this way). Text is what arrived.
	// Like Truncated, the loop tells the model its reply was cut, unless
	// Text is a complete decision anyway.
	Ended bool
	// Notes are what the provider noticed getting this reply that the
	// operator should hear about: the context fitted to the server's, a
	// silently truncated prompt sent again with a smaller budget, a token
	// limit the server ignored. They go out with the step's event.
	Notes []string
	// Retries are the failed attempts that preceded this reply (only with
	// an explicit retry count; empty otherwise).
	Retries []Attempt
	// Denied, when set, says the model tried its CLI's own tools instead
	// of deciding, and the CLI denied them (agy headless): one entry per
	// denied tool. The loop tells the model, as for a malformed reply.
	Denied []string
}

// Attempt is one failed provider call that was retried (or, as the last
// entry of Error.Retries, given up on).
type Attempt struct {
	// Attempt is 1-based.
	Attempt int `json:"attempt"`
	// Error is the failure, one line.
	Error string `json:"error"`
	// WaitMS is how long the provider waited before the next attempt
	// (0 on the last).
	WaitMS int64 `json:"wait_ms"`
}

// Usage counts tokens as the provider reported them.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
	// CacheReadTokens are input tokens served from the provider's cache
	// (agy reports them; they are part of InputTokens' cost story, not
	// added to TotalTokens).
	CacheReadTokens int64 `json:"cache_read_tokens,omitempty"`
	// ThinkingTokens are reasoning tokens the provider reported apart
	// from OutputTokens (agy).
	ThinkingTokens int64 `json:"thinking_tokens,omitempty"`
}

// Add sums u and v; a nil v adds nothing.
func (u *Usage) Add(v *Usage) {
	if v == nil {
		return
	}
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.TotalTokens += v.TotalTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.ThinkingTokens += v.ThinkingTokens
}

// Classified provider failures. The loop maps ErrTimeout to the run status
// "timeout" and ErrDenied to "denied"; anything else is "provider_error".
var (
	ErrTimeout  = exitcode.Sentinel(exitcode.TimedOut, "timed out")
	ErrDenied   = exitcode.Sentinel(exitcode.Refused, "denied")
	ErrTooLarge = exitcode.Sentinel(exitcode.Failed, "reply too large")
	ErrProtocol = exitcode.Sentinel(exitcode.Failed, "unexpected reply")
	// ErrTransport is a reply cut off in transit: a stream that ended
	// without its terminator or in the middle of a chunk, a body shorter
	// than announced, a connection reset.
	ErrTransport = exitcode.Sentinel(exitcode.Failed, "transport failure")
)

// Error is a provider failure: which provider and why.
type Error struct {
	Provider string
	Err      error
	// Retries are the attempts made before giving up, when retries were
	// enabled (the last one is this error).
	Retries []Attempt
}

func (e *Error) Error() string { return e.Provider + ": " + e.Err.Error() }

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error; %w works as usual.
func Errorf(provider, format string, args ...any) error {
	return &Error{Provider: provider, Err: fmt.Errorf(format, args...)}
}

// CtxErr turns the end of a provider call's context into the error to
// return: the parent's cause when the caller cancelled (a signal, the run's
// deadline), else ErrTimeout when the provider's own timeout fired.
func CtxErr(name string, parent, call context.Context, timeout time.Duration) error {
	if parent.Err() != nil {
		return &Error{Provider: name, Err: context.Cause(parent)}
	}
	if errors.Is(context.Cause(call), ErrTimeout) || errors.Is(call.Err(), context.DeadlineExceeded) {
		return &Error{Provider: name, Err: fmt.Errorf("%w after %v", ErrTimeout, timeout)}
	}
	return &Error{Provider: name, Err: context.Cause(call)}
}

// WithTimeout is context.WithTimeoutCause with ErrTimeout as the cause, so
// CtxErr can tell the provider's own timeout from the caller's.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, ErrTimeout)
}
