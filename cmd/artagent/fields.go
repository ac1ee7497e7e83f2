package main

import (
	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
)

// toolFields: the fields of the loop's tools policy whose flags a refusal
// may point to (words.Command's way out of "NAME=value cmd").
var toolFields = cli.Flags{"Env": "--env", "IsolationBestEffort": "--isolation-best-effort", "Network": "--network", "AllowHost": "--allow-host"}

// budgetFields word a provider's context-budget failure (the line printed
// when the provider ended a run) in run's flags.
var budgetFields = cli.Flags{"ContextTokens": "--context-tokens", "MaxTokens": "--max-tokens"}

// loopFields: the agent.Config limits run and mcp set from their flags,
// so a refused value is named by the flag typed.
var loopFields = cli.Flags{
	"MaxSteps": "--max-steps", "ObservationBytes": "--observation-bytes",
	"Deadline": "--deadline", "ToolTimeout": "--tool-timeout", "VerifyTimeout": "--verify-timeout",
	"MaxFileBytes": "--max-file-bytes",
}

// FieldFlags implements cli.FieldFlagger. agent.Config's MaxTokens is
// --token-budget, but the provider's budget errors name MaxTokens for
// --max-tokens: it is left to the library's label.
func (*RunCmd) FieldFlags() cli.Flags {
	return toolFields.With(loopFields).With(cli.Flags{"MaxFormatErrors": "--max-format-errors", "Metrics": "--metrics"})
}

// FieldFlags implements cli.FieldFlagger.
func (*McpCmd) FieldFlags() cli.Flags {
	return toolFields.With(loopFields).With(cli.Flags{"Metrics": "--metrics"})
}

// agentNetwork is --network and --allow-host as a policy's network: allow
// when only destinations are given.
func agentNetwork(mode string, hosts []string) execx.NetworkPolicy {
	n := execx.NetworkPolicy{Mode: execx.NetworkMode(mode), Allow: hosts}
	if n.Mode == "" && len(hosts) > 0 {
		n.Mode = execx.NetworkAllow
	}
	return n
}
