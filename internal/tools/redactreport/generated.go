package main

import (
	"strings"

	"github.com/lucasjones/reggen"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/art-runtime/art/lib/obs/redact"
)

// Samples made from the rules themselves, each time the report runs, so
// that they follow a gitleaks bump or a new provider format and nothing of
// them is committed:
//
//   - gitleaks: text generated from each rule's regex (reggen, the
//     generator gitleaks' own rule definitions use); a detector holding that
//     rule alone says what the secret is; gitleaks' own sample lines
//     (utils.GenerateSampleSecrets) are its source lines;
//   - art's provider formats: a token generated from the format's pattern,
//     with its checksum written (TokenFormat.Fix), in three source lines.

const perRule = 2

func generatedSecrets() ([]secret, error) {
	gl, err := gitleaksGenerated()
	if err != nil {
		return nil, err
	}
	return append(gl, providerGenerated()...), nil
}

func gitleaksGenerated() ([]secret, error) {
	detectorMu.Lock()
	d, err := detect.NewDetectorDefaultConfig()
	detectorMu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []secret
	for _, id := range d.Config.OrderedRules {
		r := d.Config.Rules[id]
		if r.Regex == nil || r.Path != nil {
			continue // rules for some files: drafts have no file name
		}
		g, err := reggen.NewGenerator(r.Regex.String())
		if err != nil {
			continue
		}
		one := detect.NewDetector(config.Config{
			Rules: map[string]config.Rule{id: r}, OrderedRules: []string{id},
			Keywords: lowerSet(r.Keywords), Allowlists: d.Config.Allowlists,
		})
		var got []secret
		seen := map[string]bool{}
		for seed := int64(1); seed <= 60 && len(got) < perRule; seed++ {
			g.SetSeed(seed)
			for _, f := range one.DetectString(g.Generate(3)) {
				if f.RuleID == id && len(f.Secret) >= 8 && !seen[f.Secret] && printable(f.Secret) {
					seen[f.Secret] = true
					ident := strings.Split(id, "-")[0]
					got = append(got, secret{set: "gitleaks rules (generated)", rule: id, value: f.Secret,
						lines: utils.GenerateSampleSecrets(ident, f.Secret)})
				}
			}
		}
		// The prefix every sample of the rule shares is no part of any
		// one secret (sk-ant-api03-).
		p := commonPrefix(got)
		for i := range got {
			got[i].prefix = p
		}
		out = append(out, got...)
	}
	return out, nil
}

func providerGenerated() []secret {
	var out []secret
	for fi, f := range redact.TokenFormats() {
		g, err := reggen.NewGenerator(f.Pattern)
		if err != nil {
			panic(f.ID + ": " + err.Error()) // the package's tests compile every pattern
		}
		for k := range perRule {
			g.SetSeed(int64(1000*fi + k + 1))
			tok := f.Fix(g.Generate(8))
			prefix := ""
			for _, p := range f.Prefixes() {
				if strings.HasPrefix(tok, p) {
					prefix = p
				}
			}
			out = append(out, secret{set: "art provider formats (generated)", rule: f.ID, value: tok, prefix: prefix,
				lines: []string{
					"const apiToken = \"" + tok + "\";",
					"export SERVICE_TOKEN=" + tok,
					"  api_key: '" + tok + "'",
				}})
		}
	}
	return out
}

func commonPrefix(ss []secret) string {
	if len(ss) < 2 {
		return ""
	}
	p := ss[0].value
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s.value, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

func lowerSet(ks []string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, k := range ks {
		m[strings.ToLower(k)] = struct{}{}
	}
	return m
}

// printable: ASCII without control characters (reggen draws from case
// folded classes, which give 'ſ' and the Kelvin sign).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
