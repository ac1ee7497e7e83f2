package main

import (
	"os"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/goal"
)

// TestBadFlagValues: every flag of every command, given a bad value, is
// refused with exit 2 and an error naming the flag (systest.BadFlags).
func TestBadFlagValues(t *testing.T) {
	doc := t.TempDir() + "/doc.json"
	if err := os.WriteFile(doc, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	systest.BadFlags(t, systest.FlagWalk{
		Grammar: &CLI{},
		Base: map[string][]string{
			"check": {"g", "--item", "k", "--evidence", "note:x"}, "close": {"g", "--closure", doc},
			"put": {"g", "--file", doc}, "receipt": {"g", "--evidence", "note:x", "--summary", "s"},
		},
		Skip: map[string]string{
			"close --rev": "the closure document is decoded first (the walk's is empty); check and receipt walk --rev",
			"put --rev":   "the journal document is decoded first (the walk's is empty); check and receipt walk --rev",
		},
		Options: []kong.Option{kong.Vars{"idrule": goal.IDRule}},
		Run:     systest.InProcess(t, "artgoal", func() (any, []kong.Option) { return &CLI{}, []kong.Option{kong.Vars{"idrule": goal.IDRule}} }),
	})
}
