package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// RulesCmd lists the redaction rules.
type RulesCmd struct{}

// Help shows an example.
func (c *RulesCmd) Help() string {
	return `Lists every rule id that can appear in an Event's redaction.reasons and
in its "[REDACTED:<rule>]" markers, with what it removes.

Example:
  artobs rules -o text
  artobs rules | jq -r '.[].id'`
}

type ruleOut struct {
	ID      string `json:"id"`
	Catches string `json:"catches"`
}

// Run lists.
func (c *RulesCmd) Run(_ context.Context, std cli.IO, g *cli.Globals) error {
	var rules []ruleOut
	for _, id := range redact.RuleIDs() {
		r, _ := redact.RuleByID(id)
		rules = append(rules, ruleOut{ID: id, Catches: redact.RuleDescriptions[r]})
	}
	if g.JSON(std) {
		b, err := jsonx.Marshal(rules)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.Out, "%s\n", b)
		return nil
	}
	for _, r := range rules {
		fmt.Fprintf(std.Out, "%-21s %s\n", r.ID, r.Catches)
	}
	return nil
}
