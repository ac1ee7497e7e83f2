package provider

import (
	"fmt"
	"strings"
)

// Instructions is the system text every model gets: the protocol, the
// actions, the rules the runtime enforces, and the run's allowlist and
// verify command. It is derived only from the request, so it is as
// deterministic as the request.
func Instructions(req *Request) string {
	var b strings.Builder
	b.WriteString(`You are a coding agent working in a confined workspace. At each step you reply with exactly one JSON object, the next action, and nothing else: no prose, no code fences.

Actions:
  {"action":"read_file","path":"REL"}                      read a file (plain relative path)
  {"action":"replace_text","path":"REL","old":"…","new":"…"} replace the single exact occurrence of old with new
  {"action":"run_tool","program":"NAME","args":["…"]}       run an allowed program in the workspace (no shell)
  {"action":"verify"}                                        run the operator's verification command
  {"action":"finish","summary":"…"}                          end the run
Every action may carry an optional "reason".

Rules the runtime enforces:
- Paths are relative to the workspace; absolute paths, "..", symlinks leaving it and new files are refused.
- replace_text needs old to occur exactly once; copy it exactly from the file, with enough context to be unique.
- Any edit opens verification debt. Only verify clears it, when the command exits 0. run_tool never clears it.
- finish is refused while debt is open. Edit, verify, then finish.
- Every refusal comes back to you as the next observation.
`)
	fmt.Fprintf(&b, "\nPrograms run_tool may use: %s\n", listOrNone(req.Allow))
	fmt.Fprintf(&b, "verify runs exactly: %s\n", strings.Join(req.Verify, " "))
	fmt.Fprintf(&b, "You have %d steps in total.\n", req.MaxSteps)
	return b.String()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

// StepNote is the line that ends every prompt: where the run stands.
func StepNote(req *Request) string {
	debt := "no verification debt"
	if req.Debt {
		debt = "verification debt is OPEN (run verify before finish)"
	}
	return fmt.Sprintf("Step %d of %d; %s. Reply with the next action as one JSON object.", req.Step, req.MaxSteps, debt)
}

// Prompt renders the whole request as one text of at most about max
// bytes, for providers that take a single prompt (agy). The history is
// fitted with Fit, so the task, the rules and the latest step always
// survive and the oldest steps collapse into a summary.
func Prompt(req *Request, max int) string {
	head := Instructions(req) + "\nTask:\n" + req.Task + "\n"
	tail := "\n" + StepNote(req) + "\n"
	budget := (max - len(head) - len(tail)) / BytesPerToken
	if budget < 1 {
		budget = 1
	}
	conv := Fit(req.History, budget)
	var b strings.Builder
	b.WriteString(head)
	if len(req.History) > 0 {
		b.WriteString("\nHistory:\n")
		if conv.Summary != "" {
			b.WriteString(conv.Summary)
			b.WriteString("\n")
		}
		for _, t := range conv.Turns {
			fmt.Fprintf(&b, "\n--- step %d: you replied\n%s\n--- observation\n%s\n", t.Step, t.Assistant, t.Observation)
		}
	}
	b.WriteString(tail)
	return b.String()
}
