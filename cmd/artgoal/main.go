// Command artgoal keeps forward-only goal journals: one JSON file per goal
// under the state home, moved through eight phases by sealed receipts with
// typed evidence, and closed once every phase is sealed and every acceptance
// item has evidence. All behaviour lives in lib/goal; this is its CLI.
package main

import (
	"os"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/goal"
)

// CLI is artgoal's grammar (docs/artgoal.md).
type CLI struct {
	cli.Globals

	New        NewCmd            `cmd:"" help:"Create a goal (its genesis journal) and print it."`
	Show       ShowCmd           `cmd:"" help:"Print a goal's journal."`
	List       ListCmd           `cmd:"" help:"List every goal (JSON Lines: one journal a line)."`
	Check      CheckCmd          `cmd:"" help:"Add evidence to an acceptance checklist item."`
	Receipt    ReceiptCmd        `cmd:"" help:"Seal the current phase with a receipt and advance to the next."`
	Close      CloseCmd          `cmd:"" help:"Close a goal with a GoalClosure document; it is immutable afterwards."`
	Put        PutCmd            `cmd:"" help:"Replace a goal with a caller-supplied successor journal, checked by the successor rules."`
	Validate   ValidateCmd       `cmd:"" help:"Check a Goal journal or GoalClosure document without touching the store."`
	Completion cli.CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func main() { os.Exit(run()) }

func run() int {
	return cli.Main("artgoal", "Forward-only goal journals: eight phases, sealed receipts, typed evidence, closure.", &CLI{},
		kong.Vars{"idrule": goal.IDRule})
}
