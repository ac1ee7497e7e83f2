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
	return `Lists every active rule: each id that can appear in an Event's
redaction.reasons and in its "[REDACTED:<rule>]" markers, where the rule
comes from (art's own rules, or gitleaks' default configuration at the
gitleaks module version this binary was built with) and what it removes.
art's provider token rules also name the provider and the page that
describes the token format ("provider", "reference").

Example:
  artobs rules -o text
  artobs rules | jq -r '.[] | select(.source == "gitleaks") | .id'
  artobs rules | jq -r '.[] | select(.provider) | [.id, .provider, .reference] | @tsv'`
}

type ruleOut struct {
	ID        string `json:"id"`
	Source    string `json:"source"`
	Version   string `json:"version"`
	Catches   string `json:"catches"`
	Provider  string `json:"provider,omitempty"`
	Reference string `json:"reference,omitempty"`
}

// Run lists.
func (c *RulesCmd) Run(_ context.Context, std cli.IO, g *cli.Globals) error {
	var rules []ruleOut
	for _, id := range redact.RuleIDs() {
		r, _ := redact.RuleByID(id)
		in := r.Info()
		rules = append(rules, ruleOut{ID: id, Source: in.Source, Version: in.Version, Catches: in.Catches, Provider: in.Provider, Reference: in.Reference})
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
		catches := r.Catches
		if r.Reference != "" {
			catches += " [format: " + r.Reference + "]"
		}
		fmt.Fprintf(std.Out, "%-40s %-8s %-10s %s\n", r.ID, r.Source, r.Version, catches)
	}
	return nil
}
