// Command artobs is art's redacting event pipeline: it turns Drafts (or any
// tool's JSON Lines, with --wrap) into redacted, content-addressed Event
// envelopes, delivers them to sinks (stdout, owner-only JSONL files), and
// verifies and tails JSONL sinks. All behaviour lives in lib/obs; this is
// its CLI.
package main

import (
	"os"

	"github.com/art-runtime/art/internal/cli"
)

// CLI is artobs's grammar (docs/artobs.md).
type CLI struct {
	cli.Globals

	Emit       EmitCmd           `cmd:"" help:"Redact Drafts (JSON Lines on stdin) into Events and deliver them to sinks."`
	Deliver    DeliverCmd        `cmd:"" help:"Deliver Events (JSON Lines on stdin) to sinks, once each (idempotent by id)."`
	Redact     RedactCmd         `cmd:"" help:"Redact Drafts on stdin into Events on stdout: the pure filter."`
	Verify     VerifyCmd         `cmd:"" help:"Check a JSONL sink: ids, canonical form, redaction, order, duplicates, corruption."`
	Tail       TailCmd           `cmd:"" help:"Print the last events of a JSONL sink, optionally of one subject, and follow it."`
	Rules      RulesCmd          `cmd:"" help:"List the redaction rules and what each removes."`
	Serve      ServeCmd          `cmd:"" help:"Serve a read-only web view of queues, tasks, agent runs, goals and events (runs artobs-web)."`
	Completion cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() { os.Exit(run()) }

func run() int {
	return cli.Main("artobs", "Redacting, content-addressed event sinks.", &CLI{})
}
