package redact

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/obs/redact/internal/gltable"
	glregexp "github.com/zricethezav/gitleaks/v8/regexp"
)

// TestGeneratedTableCurrent: gitleaks_gen.go is exactly what the generator
// makes from the gitleaks module go.mod pins: a bump without `go generate`,
// or a hand edit, fails here.
func TestGeneratedTableCurrent(t *testing.T) {
	want, err := gltable.Source("redact", goModVersion(t, gltable.Module))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("gitleaks_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("gitleaks_gen.go differs from a fresh generation (%d bytes, fresh %d): run go generate ./lib/obs/redact", len(got), len(want))
	}
}

// TestGeneratedRulesAreGitleaks: the table holds every rule of gitleaks'
// configuration with the same regex, secret group, entropy and keywords,
// and gitleaks built as the tests build it runs Go's regexp, the engine
// that runs the table (a gitleaks built with go-re2 would accept
// syntax Go's regexp does not and match differently).
func TestGeneratedRulesAreGitleaks(t *testing.T) {
	if glregexp.Version != "stdlib" {
		t.Fatalf("gitleaks regexp engine is %s, not Go's regexp", glregexp.Version)
	}
	cfg, err := gltable.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(gitleaksRules) != len(cfg.OrderedRules) || len(gitleaksRules) < 200 {
		t.Fatalf("%d generated rules, gitleaks has %d", len(gitleaksRules), len(cfg.OrderedRules))
	}
	for i, id := range cfg.OrderedRules {
		r, g := cfg.Rules[id], gitleaksRules[i]
		re := ""
		if r.Regex != nil {
			re = r.Regex.String()
		}
		if g.ID != id || g.Regex != re || g.SecretGroup != r.SecretGroup || g.Entropy != r.Entropy || strings.Join(g.Keywords, ",") != strings.Join(r.Keywords, ",") {
			t.Errorf("rule %d: generated %+v, gitleaks %s %q group %d entropy %v keywords %v", i, g, id, re, r.SecretGroup, r.Entropy, r.Keywords)
		}
	}
}

// TestEveryRuleFindsItsSample: every rule of the generated table, alone,
// compiled by the engine, finds the secret gitleaks' detector finds in the
// text reggen generates from gitleaks' regex for it, and removes all of
// it.
func TestEveryRuleFindsItsSample(t *testing.T) {
	samples, _ := gitleaksSamples(t)
	ls := table().leaks
	byID := map[string]*leakRule{}
	for _, lr := range ls.rules {
		byID[lr.id] = lr
	}
	seen := map[string]bool{}
	var sc leakScratch
	for _, s := range samples {
		lr := byID[s.rule]
		if lr == nil {
			t.Errorf("%s: gitleaks rule missing from the table", s.rule)
			continue
		}
		seen[s.rule] = true
		keywordOccurrences(ls, &sc, s.text)
		sp := lr.find(ls, &sc, s.text, 0, len(s.text), nil, 0)
		i := strings.Index(s.text, s.secret)
		if !covered(mergeSpans(sp), i, i+len(s.secret)) {
			t.Errorf("%s: the engine does not cover the secret %q in %q (spans %v)", s.rule, s.secret, s.text, sp)
		}
	}
	if len(seen) < len(ls.rules)-8 {
		t.Errorf("only %d of %d rules have a sample (no sample: %v)", len(seen), len(ls.rules), glNoSample)
	}
}
