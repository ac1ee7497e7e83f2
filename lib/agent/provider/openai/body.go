package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/exitcode"
)

// ToolName is the one function tool of ToolCall mode.
const ToolName = "decide"

const toolDescription = "Take the next step: exactly one action, with the fields it needs and null for the others."

type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// callID names the tool call of a step, deterministically (a replayed or
// resumed run sends the same messages).
func callID(step int) string { return fmt.Sprintf("call_step_%d", step) }

// Messages renders a request as chat messages within budget tokens (0:
// unbounded): the instructions as the system message, the task (with the
// summary of collapsed steps, if any), then each shown step as the
// model's decision and the observation, the last message ending with
// where the run stands. With toolCall, a decoded decision is an assistant
// tool call and its observation the tool's result; a malformed reply stays
// assistant text answered by a user message.
func Messages(req *provider.Request, budget int, tools bool) []message {
	msgs := []message{{Role: "system", Content: provider.Instructions(req)}}
	task := "Task:\n" + req.Task
	note := "\n\n" + provider.StepNote(req)
	if len(req.History) == 0 {
		return append(msgs, message{Role: "user", Content: task + note})
	}
	conv := provider.Fit(req.History, budget-fixedTokens(req))
	if conv.Summary != "" {
		task += "\n\n" + conv.Summary
	}
	msgs = append(msgs, message{Role: "user", Content: task})
	for i, t := range conv.Turns {
		obs := fmt.Sprintf("Observation of step %d:\n%s", t.Step, t.Observation)
		if i == len(conv.Turns)-1 {
			obs += note
		}
		if tools && t.Decoded {
			id := callID(t.Step)
			msgs = append(msgs,
				message{Role: "assistant", ToolCalls: []toolCall{{ID: id, Type: "function", Function: functionCall{Name: ToolName, Arguments: t.Assistant}}}},
				message{Role: "tool", ToolCallID: id, Content: obs})
			continue
		}
		msgs = append(msgs, message{Role: "assistant", Content: t.Assistant}, message{Role: "user", Content: obs})
	}
	return msgs
}

// schemaPart is what carries the decision schema in the body.
func (p *Provider) schemaPart() map[string]any {
	if p.cfg.ToolCall {
		return map[string]any{
			"tools": []any{map[string]any{
				"type": "function",
				"function": map[string]any{
					"name":        ToolName,
					"description": toolDescription,
					"parameters":  json.RawMessage(provider.StrictDecisionSchema),
					"strict":      true,
				},
			}},
			"tool_choice":         "required",
			"parallel_tool_calls": false,
		}
	}
	return map[string]any{
		"response_format": map[string]any{
			"type": "json_schema",
			"json_schema": map[string]any{
				"name":   "decision",
				"schema": json.RawMessage(provider.StrictDecisionSchema),
				"strict": true,
			},
		},
	}
}

// PromptBudget is the tokens the messages may take, as provider.Fit
// counts them (provider.EstimateTokens): the context in force less the
// reply's max_tokens and the schema (which servers render into the prompt
// in tool mode, and some in json_schema mode too), converted from the
// bytes per token learnt from usage, with a margin.
func (p *Provider) PromptBudget() int {
	ctxTokens, bpt := p.contextNow()
	b, _ := json.Marshal(p.schemaPart())
	real := float64(ctxTokens-p.cfg.MaxTokens) - math.Ceil(float64(len(b))/bpt)
	return int(real * budgetMargin * bpt / provider.BytesPerToken)
}

// Body is the JSON request body for req. It fails, as a provider error,
// when the instructions and the task alone do not fit the context.
func (p *Provider) Body(req *provider.Request) ([]byte, error) {
	b, _, err := p.build(req)
	return b, err
}

// build is Body and the prompt's bytes as learn counts them.
func (p *Provider) build(req *provider.Request) ([]byte, int, error) {
	budget := p.PromptBudget()
	if fixed := fixedTokens(req); fixed+minHistoryTokens > budget {
		ctxTokens, _ := p.contextNow()
		if ctxTokens < p.cfg.ContextTokens {
			return nil, 0, &provider.Error{Provider: Name, Err: exitcode.Fieldf(exitcode.Internal, "MaxTokens", strconv.Itoa(p.cfg.MaxTokens),
				"context: the instructions and the task alone need about %d tokens, and only %d are left of the %d the server serves the model with once %s %d and the schema are reserved; lower %s, raise the server's context or shorten the task",
				fixed, budget, ctxTokens, exitcode.Ref("MaxTokens"), p.cfg.MaxTokens, exitcode.Ref("MaxTokens"))}
		}
		return nil, 0, &provider.Error{Provider: Name, Err: exitcode.Fieldf(exitcode.Internal, "ContextTokens", strconv.Itoa(ctxTokens),
			"context: the instructions and the task alone need about %d tokens, and only %d are left of %s %d once %s %d and the schema are reserved; raise %s or shorten the task",
			fixed, budget, exitcode.Ref("ContextTokens"), ctxTokens, exitcode.Ref("MaxTokens"), p.cfg.MaxTokens, exitcode.Ref("ContextTokens"))}
	}
	msgs := Messages(req, budget, p.cfg.ToolCall)
	body := map[string]any{
		"model":        p.cfg.Model,
		"messages":     msgs,
		p.tokenField(): p.cfg.MaxTokens,
		"stream":       p.cfg.Stream,
	}
	for k, v := range p.schemaPart() {
		body[k] = v
	}
	if p.cfg.Stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, provider.Errorf(Name, "encode request: %w", err)
	}
	return b, p.promptBytes(msgs), nil
}

// minHistoryTokens is the least room left for the history (the latest
// observation, cut) beside the instructions and the task.
const minHistoryTokens = 256

// fixedTokens estimates what every request carries whatever the history:
// the instructions, the task and the step note.
func fixedTokens(req *provider.Request) int {
	return provider.EstimateTokens(provider.Instructions(req)) + provider.EstimateTokens("Task:\n"+req.Task+"\n\n"+provider.StepNote(req)) + 2*provider.MessageOverheadTokens
}

// MessagesTokens estimates the tokens of msgs as the budget counts them.
func MessagesTokens(msgs []message) int {
	n := 0
	for _, m := range msgs {
		n += provider.EstimateTokens(m.Content) + provider.EstimateTokens(toolArgs(m)) + provider.MessageOverheadTokens
	}
	return n
}

func toolArgs(m message) string {
	s := ""
	for _, c := range m.ToolCalls {
		s += c.Function.Arguments
	}
	return s
}
