package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lucasjones/reggen"
)

// providerSamples generates n tokens of every format from its own pattern
// (reggen, fixed seeds), with the checksum written where it has one.
func providerSamples(t testing.TB, n int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for fi, f := range TokenFormats() {
		g, err := reggen.NewGenerator(f.Pattern)
		if err != nil {
			t.Fatalf("%s: %v", f.ID, err)
		}
		key := f.ID + "/" + f.Prefixes()[0]
		for seed := int64(1); len(out[key]) < n && seed < int64(40*n); seed++ {
			g.SetSeed(seed*1000 + int64(fi))
			s := f.Fix(g.Generate(8))
			if !randomBody(s[len(s)/2:]) {
				continue // a generated body that happens to look written
			}
			out[key] = append(out[key], s)
		}
		if len(out[key]) == 0 {
			t.Fatalf("%s: no sample generated from %q", f.ID, f.Pattern)
		}
	}
	return out
}

// tokenPlacements are the places a token stands in drafts.
func tokenPlacements(tok string) map[string]map[string]any {
	return map[string]map[string]any{
		"bare":         {"v": tok},
		"in text":      {"out": "using " + tok + " for the upload"},
		"quoted":       {"out": `cfg = "` + tok + `"`},
		"single":       {"out": `deploy('` + tok + `')`},
		"header":       {"cmd": `curl -H "X-Api-Key: ` + tok + `" https://api.example.com/v1`},
		"bearer":       {"cmd": `curl -H 'Authorization: Bearer ` + tok + `' https://api.example.com/v1`},
		"url userinfo": {"remote": "https://" + tok + "@api.example.com/v1/items"},
		"url password": {"remote": "https://ci:" + tok + "@git.example.com/org/repo.git"},
		"json":         {"body": `{"config":{"value":"` + tok + `"},"ok":true}`},
		"array":        {"args": []any{"upload", tok}},
	}
}

// leftReadable reports whether 8 or more consecutive characters of secret
// (all of it, if shorter) are in out.
func leftReadable(out, secret string) bool {
	if len(secret) <= 8 {
		return strings.Contains(out, secret)
	}
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+8]) {
			return true
		}
	}
	return false
}

func TestProviderFormatsRedactedWhole(t *testing.T) {
	r := New(Options{})
	for fam, toks := range providerSamples(t, 3) {
		for _, tok := range toks {
			for where, attrs := range tokenPlacements(tok) {
				var sum Summary
				out := string(r.AppendAttrs(nil, attrs, nil, &sum))
				if !json.Valid([]byte(out)) {
					t.Errorf("%s/%s: invalid JSON %s", fam, where, out)
				}
				// A fixed-length prefix such as "pypi-AgEIcHlwaS5vcmc" is
				// the same in every token: what must go is the rest.
				if leftReadable(out, tok[len(commonPrefix(fam)):]) {
					t.Errorf("%s/%s: token %q left readable: %s", fam, where, tok, out)
				}
				assertFixedPoint(t, r, []byte(out), fam+"/"+where)
			}
		}
	}
}

// commonPrefix is the prefix a family's tokens share (fam is "id/prefix").
func commonPrefix(fam string) string {
	_, p, _ := strings.Cut(fam, "/")
	return p
}

func TestProviderRulesListed(t *testing.T) {
	ids := map[string]bool{}
	for _, f := range TokenFormats() {
		ids[f.ID] = true
		r, ok := RuleByID(f.ID)
		if !ok {
			t.Fatalf("format %s is not a rule", f.ID)
		}
		in := r.Info()
		if in.Provider == "" || in.Reference == "" || !strings.Contains(in.Reference, "https://") {
			t.Errorf("rule %s: provider %q, reference %q: both must be set, the reference with its URL", f.ID, in.Provider, in.Reference)
		}
		for _, p := range f.Prefixes() {
			if len(p) < 3 && !shortPrefixOK[f.ID] {
				t.Errorf("format %s: prefix %q is shorter than 3 characters", f.ID, p)
			}
		}
	}
	if len(ids) < 100 {
		t.Errorf("%d provider rules; the table aims at every family with a distinctive prefix", len(ids))
	}
}

// shortPrefixOK are formats whose short prefix is backed by a rigid body
// (Discord's three dotted parts, Asana's n/digits:hex, Twilio's SK and 32
// hex, Okta's 00 and 40 characters, Yandex's YC and 38, Telegram's
// 5–16 digits, ':' and 35 characters, Meta's 15–16 digits, '|' and 27).
var shortPrefixOK = map[string]bool{"discord-bot-token": true, "asana-pat": true, "twilio-api-key": true, "okta-api-token": true,
	"yandex-cloud-token": true, "telegram-bot-token": true, "facebook-app-token": true}

func TestGitHubChecksum(t *testing.T) {
	// A token whose last six characters are the base62 CRC32 of the 30
	// before them is recognised glued to other text; one whose checksum is
	// wrong must start and end a word.
	body := "Xq3vT8rL2mN9pK4sW7yZ1aB5cD6eF0"
	good := "ghp_" + body + base62CRC(body)
	if !githubChecksumOK(good) {
		t.Fatalf("%s: checksum does not verify", good)
	}
	bad := good[:39] + string(rune(good[39]^1))
	if githubChecksumOK(bad) {
		t.Fatalf("%s: a wrong checksum verifies", bad)
	}
	r := New(Options{})
	var sum Summary
	if out := r.Text("id"+good+"x", &sum); strings.Contains(out, body) {
		t.Errorf("glued token with a valid checksum survived: %s", out)
	}
	for _, f := range TokenFormats() {
		if def, _ := f.Checksum(good); def {
			g, _ := reggen.NewGenerator(f.Pattern)
			g.SetSeed(7)
			tok := f.Fix(g.Generate(4))
			if _, ok := f.Checksum(tok); !ok {
				t.Errorf("%s: Fix gives %q, whose checksum does not verify", f.ID, tok)
			}
		}
	}
}

func TestProviderNoFalseHits(t *testing.T) {
	r := New(Options{})
	for _, v := range []string{
		"re_evaluate_the_configuration_before_start",
		"the test_suite_for_everything_in_this_repository passed",
		"secret_key_base_for_development_environment_only", "live_reload_enabled_for_development_x",
		"API-REFERENCE-DOCUMENTATION-PAGE", "hf_hub_download_with_progress_bar_and_more",
		"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"00e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"MTIzNDU2Nzg5MA is base64 of a number", "pat.example.com", "1/2 of the tests",
	} {
		var sum Summary
		if out := r.Text(v, &sum); out != v {
			t.Errorf("%q became %q (%v)", v, out, sum.Reasons())
		}
	}
}

func FuzzProviderTokenWhole(f *testing.F) {
	samples := providerSamples(f, 2)
	var toks []string
	for _, ts := range samples {
		toks = append(toks, ts...)
	}
	f.Add(uint(0), uint(0), "x")
	f.Add(uint(3), uint(5), `{"a": "`)
	r := New(Options{})
	f.Fuzz(func(t *testing.T, which, where uint, around string) {
		tok := toks[which%uint(len(toks))]
		ps := tokenPlacements(tok)
		names := make([]string, 0, len(ps))
		for k := range ps {
			names = append(names, k)
		}
		// Deterministic choice of placement, and fuzzed text around it
		// in a second member.
		slices.Sort(names)
		attrs := ps[names[where%uint(len(names))]]
		attrs["around"] = around + " " + tok + " " + around
		var sum Summary
		out := string(r.AppendAttrs(nil, attrs, nil, &sum))
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid JSON: %s", out)
		}
		for _, fam := range familyOf(samples, tok) {
			if leftReadable(out, tok[len(commonPrefix(fam)):]) {
				t.Fatalf("%s left readable: %s", tok, out)
			}
		}
		assertFixedPoint(t, r, []byte(out), "fuzz provider")
	})
}

func familyOf(samples map[string][]string, tok string) []string {
	for fam, ts := range samples {
		for _, x := range ts {
			if x == tok {
				return []string{fam}
			}
		}
	}
	return nil
}
