// Command artagent runs an agent loop that can act only through the
// bounded runner (lib/execx) and the confined workspace editor
// (lib/workspace): one decision per step from a model provider, every
// action a request the runner or the editor may refuse, and a finish
// accepted only after the operator's verification command has passed.
// `artagent mcp` serves the same core to any Model Context Protocol
// client instead of a provider.
package main

import (
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/execx"
)

// CLI is artagent's grammar.
type CLI struct {
	cli.Globals
	Run        RunCmd            `cmd:"" help:"Run the agent loop on a workspace until a verified finish or a limit."`
	Mcp        McpCmd            `cmd:"" name:"mcp" help:"Serve the runner, the editor and verification debt to an MCP client (stdio or loopback HTTP)."`
	Completion cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	os.Exit(run())
}

func run() int {
	return cli.Main("artagent", "An agent loop that acts only through the bounded runner and the confined workspace editor.", &CLI{})
}
