package provider

import (
	"fmt"
	"strings"
)

// BytesPerToken is the ratio the context budget estimates tokens with:
// one token per 3 bytes of text, rounded up. Tokenizers of current models
// average about 4 bytes per token on English and 3 to 3.5 on code and
// JSON, so 3 over-counts for what an agent sends (source, tool output,
// decisions) and the estimate errs on the side of a smaller request.
// Text far from that (long runs of CJK, base64) can need more tokens than
// estimated: leave a margin in --context-tokens for it.
const BytesPerToken = 3

// MessageOverheadTokens is added per chat message for the role and the
// template's framing.
const MessageOverheadTokens = 8

// OlderObservationBytes is how much of each observation but the latest is
// kept (head and tail) once the whole conversation does not fit.
const OlderObservationBytes = 2048

// summaryLineBytes bounds one line of the summary of collapsed steps.
const summaryLineBytes = 160

// EstimateTokens estimates the tokens of s (see BytesPerToken).
func EstimateTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// Shown is one step as it is shown to the model.
type Shown struct {
	Step        int
	Assistant   string // the canonical decision, or the cut malformed reply
	Observation string
	Decoded     bool // Assistant is a canonical decision
}

// Conversation is the history of a request as it fits the budget: a
// summary of the oldest steps (empty when none was collapsed) and the
// later steps shown in full or cut.
type Conversation struct {
	Summary string
	Turns   []Shown
	// Tokens is the estimate of Summary and Turns, with message overheads.
	Tokens int
}

func turnTokens(a, o string) int {
	return EstimateTokens(a) + EstimateTokens(o) + 2*MessageOverheadTokens + 8 // + "Observation of step N:" framing
}

// Fit shows req's history within budget tokens (0 or less: unbounded). It
// is deterministic, a pure function of (history, budget), so a resumed or
// replayed run sends the same messages. In order, until it fits:
//
//  1. every step as it was: the canonical decision and the observation;
//  2. every observation and decision but the latest cut head-and-tail to
//     OlderObservationBytes;
//  3. the oldest steps, one by one, collapsed into a summary of one line
//     each: step, action, outcome, refusal or exit code (the summary keeps
//     its latest lines when it alone would take more than a quarter of the
//     budget);
//  4. only the latest step left, its decision and observation cut
//     head-and-tail to what remains (at least 512 bytes between them).
//
// Nothing is dropped without a word: the summary says how many steps it
// covers and how many it omits, and each cut says how many bytes it elided.
func Fit(history []Turn, budget int) Conversation {
	shown := make([]Shown, len(history))
	for i, t := range history {
		_, err := DecodeDecision([]byte(t.Reply))
		shown[i] = Shown{Step: t.Step, Assistant: t.Reply, Observation: t.Observation, Decoded: err == nil}
	}
	total := func(summary string, turns []Shown) int {
		n := 0
		if summary != "" {
			n += EstimateTokens(summary) + MessageOverheadTokens
		}
		for _, s := range turns {
			n += turnTokens(s.Assistant, s.Observation)
		}
		return n
	}
	done := func(summary string, turns []Shown) Conversation {
		return Conversation{Summary: summary, Turns: turns, Tokens: total(summary, turns)}
	}
	if budget <= 0 || total("", shown) <= budget {
		return done("", shown)
	}
	// 2: older observations cut.
	for i := 0; i < len(shown)-1; i++ {
		shown[i].Observation, _ = HeadTail(shown[i].Observation, OlderObservationBytes)
		shown[i].Assistant, _ = HeadTail(shown[i].Assistant, OlderObservationBytes)
	}
	if total("", shown) <= budget {
		return done("", shown)
	}
	// 3: collapse the oldest steps. Costs are summed incrementally: a run
	// may have thousands of steps.
	lines := make([]string, len(history))
	for i, t := range history {
		lines[i] = summaryLine(t)
	}
	tail := make([]int, len(shown)+1) // tail[k]: tokens of shown[k:]
	for k := len(shown) - 1; k >= 0; k-- {
		tail[k] = tail[k+1] + turnTokens(shown[k].Assistant, shown[k].Observation)
	}
	maxSummary := budget / 4
	for k := 1; k < len(shown); k++ {
		summary := summarize(lines[:k], maxSummary)
		if EstimateTokens(summary)+MessageOverheadTokens+tail[k] <= budget {
			return done(summary, shown[k:])
		}
	}
	// 4: the latest step alone, its observation cut to what remains.
	k := len(shown) - 1
	summary := summarize(lines[:k], maxSummary)
	last := shown[k]
	room := (budget - EstimateTokens(summary) - MessageOverheadTokens - turnTokens("", "")) * BytesPerToken
	if room < 512 {
		room = 512
	}
	// The decision keeps up to half the room (a replace_text with a large
	// new text is shown cut, as an observation is); the observation the
	// rest.
	if len(last.Assistant) > room/2 {
		last.Assistant, _ = HeadTail(last.Assistant, room/2)
	}
	last.Observation, _ = HeadTail(last.Observation, room-len(last.Assistant))
	return done(summary, []Shown{last})
}

// summaryLine is one collapsed step: "step 3: replace_text a.go → rejected
// (match)".
func summaryLine(t Turn) string {
	what := "malformed reply"
	if d, err := DecodeDecision([]byte(t.Reply)); err == nil {
		what = d.String()
	}
	how := t.Outcome
	if how == "" {
		how = "observation"
	}
	if t.Refusal != "" {
		how += " (" + t.Refusal + ")"
	}
	if t.ExitCode != nil {
		how += fmt.Sprintf(" (exit %d)", *t.ExitCode)
	}
	line := fmt.Sprintf("- step %d: %s → %s", t.Step, what, how)
	line = strings.Join(strings.Fields(line), " ")
	if len(line) > summaryLineBytes {
		line, _ = HeadTail(line, summaryLineBytes)
		line = strings.ReplaceAll(line, "\n", " ")
	}
	return line
}

// summarize renders the summary of collapsed steps within max tokens,
// keeping the latest lines.
func summarize(lines []string, max int) string {
	head := fmt.Sprintf("Earlier steps, summarised to fit the context (%d steps; their replies and output are no longer shown):", len(lines))
	n := EstimateTokens(head) + 1
	first := len(lines)
	for first > 0 {
		c := EstimateTokens(lines[first-1]) + 1
		if n+c > max && first < len(lines) {
			break
		}
		n += c
		first--
	}
	var b strings.Builder
	b.WriteString(head)
	if first > 0 {
		fmt.Fprintf(&b, "\n- [%d earlier steps omitted]", first)
	}
	for _, l := range lines[first:] {
		b.WriteString("\n")
		b.WriteString(l)
	}
	return b.String()
}
