package redact

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"

	"github.com/art-runtime/art/lib/obs/redact/internal/gltable"
	"github.com/lucasjones/reggen"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// The gitleaks corpus is generated here, from the rule set itself, each
// time the tests run; nothing of it is committed. For every rule of
// gitleaks' default configuration:
//
//  1. reggen (the generator gitleaks' own rule tests use) produces text
//     from the rule's regular expression, with fixed seeds;
//  2. gitleaks' detector, run on that text, says what the secret is (the
//     rule's secret group, after its entropy and allowlist checks);
//  3. the secret is placed the way agent and CI drafts carry it: bare
//     (a whole value under an innocuous key, in a log line, after
//     export NAME=, nested in arrays and maps, in JSON text inside a
//     string) and in source lines: gitleaks' own sample lines
//     (utils.GenerateSampleSecrets: INI, JSON, XML, YAML, C#, Go, Java,
//     Kotlin, PHP, Python, Logstash, Makefile) plus JS/TS, Ruby, shell,
//     TOML, .properties, .env, curl and .NET config lines, each as a value,
//     inside a log, nested, and inside JSON text.
//
// Each draft is redacted, and gitleaks' detector runs over the same draft
// serialized as JSON. The test fails if gitleaks finds a secret that
// survives redaction, or if a secret under a secret-named name survives.
// -redact.report prints recall and false-positive rates per placement
// (scripts/redact-report.sh).

var reportFlag = flag.Bool("redact.report", false, "print recall and false-positive rates per placement, artobs beside gitleaks")

type glSample struct {
	rule   string
	secret string
	text   string // the generated text gitleaks found it in
	ident  string // a name for it: the rule id's first word
}

var (
	glOnce     sync.Once
	glSamples  []glSample
	glDetector *detect.Detector
	glNoSample []string // rules without a sample, and why
)

// gitleaksSamples generates up to two secrets per rule.
func gitleaksSamples(t testing.TB) ([]glSample, *detect.Detector) {
	glOnce.Do(func() {
		d, err := detect.NewDetectorDefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		glDetector = d
		for _, id := range d.Config.OrderedRules {
			r := d.Config.Rules[id]
			if r.Regex == nil {
				glNoSample = append(glNoSample, id+" (path-only)")
				continue
			}
			if textOnlyInPath[id] {
				glNoSample = append(glNoSample, id+" (not applied to drafts)")
				continue
			}
			g, err := reggen.NewGenerator(r.Regex.String())
			if err != nil {
				glNoSample = append(glNoSample, id+" ("+err.Error()+")")
				continue
			}
			// A detector with this rule alone (and the global allowlist)
			// says what the secret of the generated text is.
			one := detect.NewDetector(config.Config{
				Rules: map[string]config.Rule{id: r}, OrderedRules: []string{id},
				Keywords: lowerKeywords(r.Keywords), Allowlists: d.Config.Allowlists,
			})
			var pathGen *reggen.Generator
			if r.Path != nil {
				pathGen, _ = reggen.NewGenerator(r.Path.String())
			}
			got := map[string]bool{}
			for seed := int64(1); seed <= 80 && len(got) < 2; seed++ {
				g.SetSeed(seed)
				text := g.Generate(3)
				//lint:ignore SA1019 Detect takes this type until gitleaks v9
				frag := detect.Fragment{Raw: text}
				if pathGen != nil {
					// A rule for some files: a file name it applies to.
					pathGen.SetSeed(seed)
					frag.FilePath = pathGen.Generate(1)
				}
				for _, f := range one.Detect(frag) {
					secret := f.Secret
					if tree, err := syntax.Parse(r.Regex.String(), syntax.Perl); err == nil && r.SecretGroup == 0 && len(fragmentGroups(tree)) > 0 {
						// gitleaks' secret is a piece of the token (a
						// named or repeated group): the token is the match.
						secret = f.Match
					}
					if f.RuleID == id && len(secret) >= 8 && !got[secret] && plainASCII(secret) {
						got[secret] = true
						ident := strings.Split(id, "-")[0]
						glSamples = append(glSamples, glSample{rule: id, secret: secret, text: text, ident: ident})
					}
				}
			}
			if len(got) == 0 {
				glNoSample = append(glNoSample, id+" (reggen text not detected by gitleaks)")
			}
		}
	})
	return glSamples, glDetector
}

// readable reports whether any of secret is left readable in out: a run of
// 8 of its characters (all of it, if shorter), as is or JSON-escaped, that
// in, the input, holds only where the secret is. A partly removed secret is
// not stopped.
func readable(out, secret, in string) bool {
	const w = 8
	out = markerPattern.ReplaceAllString(out, "[]")
	around := strings.ReplaceAll(in, secret, "\x00")
	if len(secret) <= w {
		return strings.Contains(out, secret)
	}
	for i := 0; i+w <= len(secret); i++ {
		win := secret[i : i+w]
		esc := strings.Trim(jsonText(win), `"`)
		for _, x := range []string{win, esc} {
			if strings.Contains(out, x) && !strings.Contains(around, x) {
				return true
			}
		}
	}
	return false
}

var markerPattern = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+(?::hmac-sha256:[0-9a-f]{16})?\]`)

// plainASCII: printable ASCII without newlines. reggen draws from case
// folded classes, so (?i)[a-z] can give 'ſ' or the Kelvin sign; such
// secrets say nothing about real ones.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func lowerKeywords(ks []string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, k := range ks {
		m[strings.ToLower(k)] = struct{}{}
	}
	return m
}

// placement puts a secret (or a line carrying it) into draft attrs.
type placement struct {
	name  string
	attrs func(s glSample) map[string]any
}

func bare(name string, f func(secret string) map[string]any) placement {
	return placement{name: name, attrs: func(s glSample) map[string]any { return f(s.secret) }}
}

// jsonText is v as JSON text.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var barePlacements = []placement{
	bare("value", func(s string) map[string]any { return map[string]any{"v": s} }),
	bare("log line", func(s string) map[string]any {
		return map[string]any{"out": "2026-12-01T09:00:00Z INFO upload: using " + s + " for the release\nok"}
	}),
	bare("export NAME=", func(s string) map[string]any {
		return map[string]any{"cmd": "export NAME=" + s + " && make deploy"}
	}),
	bare("nested", func(s string) map[string]any {
		return map[string]any{"a": map[string]any{"b": []any{1, map[string]any{"c": []any{"x", s}}}}}
	}),
	bare("json in string", func(s string) map[string]any {
		return map[string]any{"body": jsonText(map[string]any{"data": map[string]any{"value": s}})}
	}),
}

// sourceLines are the lines of code and config the secret is written in:
// gitleaks' own samples and the formats they leave out.
func sourceLines(s glSample) map[string]string {
	out := map[string]string{}
	for i, l := range utils.GenerateSampleSecrets(s.ident, s.secret) {
		out[fmt.Sprintf("gitleaks sample %02d", i)] = l
	}
	i, I, v := s.ident, strings.ToUpper(s.ident), s.secret
	for k, l := range map[string]string{
		"js":          "const " + i + "Token = \"" + v + "\";",
		"ts":          "export const " + i + "Token: string = '" + v + "';",
		"ruby":        i + "_token = \"" + v + "\"",
		"ruby hash":   ":" + i + "_token => '" + v + "',",
		"shell":       "export " + I + "_TOKEN=" + v,
		"shell flag":  "deploy --" + i + "-token " + v + " --verbose",
		"toml":        i + "_token = \"" + v + "\"",
		"properties":  i + ".token=" + v,
		"env":         I + "_TOKEN=" + v,
		"curl header": "curl -H 'X-" + i + "-Token: " + v + "' https://api.example.com/",
		"curl auth":   "curl -H \"Authorization: Bearer " + v + "\" https://api.example.com/",
		"xml element": "<" + i + "Token>" + v + "</" + i + "Token>",
		"xml add key": "<add key=\"" + i + "Password\" value=\"" + v + "\" />",
		"yaml wide":   i + "_token:        " + v,
		"php array":   "'" + i + "_token' => '" + v + "',",
	} {
		out[k] = l
	}
	return out
}

func linePlacements(line string) map[string]map[string]any {
	return map[string]map[string]any{
		"line as value":  {"line": line},
		"line in log":    {"out": "step 3/7\n" + line + "\ndone"},
		"line nested":    {"files": []any{map[string]any{"text": []any{line}}}},
		"line in json":   {"body": jsonText(map[string]any{"file": "x", "content": line})},
		"line as argv":   {"args": []any{"sh", "-c", line}},
		"line under key": {"file": map[string]string{"content": line}},
	}
}

// tokenLike are secrets that can stand in a source line unquoted.
var tokenLike = regexp.MustCompile(`^[A-Za-z0-9+/=_.~:@-]+$`)

type tally struct{ n, art, gl, glOnly int }

func (t *tally) add(art, gl bool) {
	t.n++
	if art {
		t.art++
	}
	if gl {
		t.gl++
		if !art {
			t.glOnly++
		}
	}
}

func pct(a, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(n))
}

// glFinds reports whether gitleaks, run over the draft as JSON, finds the
// secret (a finding's match contains it, or it contains the finding's
// secret).
func glFinds(d *detect.Detector, attrs map[string]any, secret string) bool {
	draft := jsonText(map[string]any{"apiVersion": "art/v1alpha1", "kind": "Draft", "subject": "task/1", "type": "task.output", "attrs": attrs})
	for _, f := range d.DetectString(draft) {
		if strings.Contains(f.Match, secret) || (len(f.Secret) >= 8 && strings.Contains(secret, f.Secret)) {
			return true
		}
	}
	return false
}

func TestGitleaksCorpus(t *testing.T) {
	samples, d := gitleaksSamples(t)
	r := New(Options{})
	stats := map[string]*tally{}
	count := func(p string, art, gl bool) {
		if stats[p] == nil {
			stats[p] = &tally{}
		}
		stats[p].add(art, gl)
	}
	families := map[string]bool{}
	check := func(s glSample, where string, attrs map[string]any, mustStop bool) {
		var sum Summary
		out := string(r.AppendAttrs(nil, attrs, nil, &sum))
		stopped := !readable(out, s.secret, jsonText(attrs))
		// gitleaks' verdict matters where the secret survived (and for
		// the report): it is what the test holds artobs to.
		gl := false
		if !stopped || *reportFlag {
			gl = glFinds(d, attrs, s.secret)
		}
		count(where, stopped, gl)
		if !stopped && (gl || mustStop) {
			t.Errorf("%s/%s: secret %q survived (gitleaks finds it: %v):\n%s", s.rule, where, s.secret, gl, out)
		}
		if stopped {
			families[s.rule] = true
		}
	}
	for _, s := range samples {
		for _, p := range barePlacements {
			check(s, p.name, p.attrs(s), false)
		}
		if !tokenLike.MatchString(s.secret) {
			continue // quotes, spaces: not a value a source line can hold as is
		}
		k := 0
		for _, line := range sourceLines(s) {
			for where, attrs := range linePlacements(line) {
				if k++; raceEnabled && !*reportFlag && k%5 != 0 {
					continue // a fifth of the line placements, rotating
				}
				// Every source line names the secret like one (…Token,
				// …_TOKEN, …Password): art's own rules must stop it
				// whatever gitleaks says.
				check(s, where, attrs, true)
			}
		}
	}
	// Every rule with a pattern has samples and is exercised, but for the
	// few reggen cannot turn into text gitleaks detects.
	all := table().leaks.rules
	var missing []string
	for _, lr := range all {
		if !families[lr.id] {
			missing = append(missing, lr.id)
		}
	}
	if len(missing) > 8 {
		t.Errorf("%d of %d gitleaks rules not exercised: %v (no sample: %v)", len(missing), len(all), missing, glNoSample)
	}
	if *reportFlag {
		printReport(t, stats, len(samples), len(families), missing)
	}
}

func printReport(t *testing.T, stats map[string]*tally, nSamples, nFamilies int, missing []string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "# %d secrets from %d gitleaks rules (%s %s); not exercised: %v\n", nSamples, nFamilies, gltable.Module, goModVersion(t, gltable.Module), missing)
	fmt.Fprintln(w, "placement\tdrafts\tartobs recall\tgitleaks recall\tgitleaks-only")
	names := make([]string, 0, len(stats))
	for k := range stats {
		names = append(names, k)
	}
	sort.Strings(names)
	var tot tally
	for _, k := range names {
		s := stats[k]
		tot.n += s.n
		tot.art += s.art
		tot.gl += s.gl
		tot.glOnly += s.glOnly
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\n", k, s.n, pct(s.art, s.n), pct(s.gl, s.n), s.glOnly)
	}
	fmt.Fprintf(w, "all\t%d\t%s\t%s\t%d\n", tot.n, pct(tot.art, tot.n), pct(tot.gl, tot.n), tot.glOnly)
	w.Flush()
	fp := falsePositiveRates(t)
	fmt.Fprintln(w, "\nfalse positives (harmless values changed / flagged)")
	fmt.Fprintln(w, "placement\tvalues\tartobs\tgitleaks")
	names = names[:0]
	for k := range fp {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", k, fp[k].n, pct(fp[k].art, fp[k].n), pct(fp[k].gl, fp[k].n))
	}
	w.Flush()
}

// goModVersion is the version go.mod requires (test binaries carry no
// dependency list in their build info).
func goModVersion(t *testing.T, path string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(corpusPath()), "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "unknown"
}

// harmless are values a user needs to see that look like secrets to a
// careless scanner. None may change, in any placement.
var harmless = []string{
	// git object ids, full and short
	"4b825dc642cb6eb9a060e54bf8d69288fbee4904", "e83c5163316f89bfbde7d9ab23ca2e25604af290", "0bca10c", "b051933f",
	// digests
	"d41d8cd98f00b204e9800998ecf8427e",
	"da39a3ee5e6b4b0d3255bfef95601890afd80709",
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
	// go.sum lines and h1: hashes
	"h1:OsiLlxUxF9VT+uOO1ZA7AMeKyQ6bSeeu9T0czLO9GOA=",
	"github.com/pelletier/go-toml/v2 v2.4.3 h1:OsiLlxUxF9VT+uOO1ZA7AMeKyQ6bSeeu9T0czLO9GOA=",
	"github.com/pelletier/go-toml/v2 v2.4.3/go.mod h1:s9VVkdbr6S4e4phKQM8A1z5XEHB/Bsb6WHiE4Lc9lTc=",
	// UUIDs and ULIDs
	"123e4567-e89b-12d3-a456-426614174000", "f47ac10b-58cc-4372-a567-0e02b2c3d479",
	"01ARZ3NDEKTSV4RRFFQ69G5FAV", "task-01J9ZQ4X2B8Y6M3N7K5P0RSTVW",
	// npm integrity
	"sha512-2nN1Hc3N2Jg8eN9Wq4u9p6dB3Mg7v7W5tK9bS5dyw5S2nHjGpG3kq5cQjZ3z0z0Rr0G8Y2v7X0w3xkqZl6zQ==",
	"sha1-ZSxO5rMp9zQH/Zb8oVJ0B4oQfWc=",
	// public keys
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
	"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----",
	"age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
	// file paths and URLs without credentials
	"/home/runner/work/api/api/internal/store/store_test.go:42", "./lib/obs/redact/leaks.go",
	"C:\\Users\\runner\\AppData\\Local\\Temp\\go-build123", "~/.config/art/config.toml",
	"https://github.com/art-runtime/art/blob/main/lib/obs/redact/leaks.go#L42",
	"https://proxy.golang.org/github.com/zricethezav/gitleaks/v8/@v/v8.30.1.zip",
	"https://api.example.com/v1/items?page=2&limit=50&sort=created_at",
	// versions and timestamps
	"v8.30.1", "1.26.0", "v0.0.0-20250218142911-aa4b98e5adaa", "2026-12-01T09:53:00Z", "2026-12-01T09:53:00.123456789+01:00",
	"Tue Dec  1 09:53:00 UTC 2026", "1733046780",
	// test output
	"--- PASS: TestTokenRefresh (0.00s)", "--- FAIL: TestPasswordReset (0.01s)", "=== RUN   TestSecretRotation/rotate",
	"ok  \tgithub.com/art-runtime/art/lib/obs/redact\t1.038s", "FAIL\tgithub.com/art-runtime/art/lib/obs\t0.580s",
	"PASSED tests/test_auth.py::test_token_refresh", "tests/test_auth.py::test_api_key_rotation FAILED",
	"  ✓ refreshes the access token (12 ms)", "Tests:       1 failed, 41 passed, 42 total",
	// usage counters and references to secrets
	"max_tokens=4096", "input_tokens: 1834", "secret_name=prod/db", "token_count=12",
}

func TestHarmlessValuesUntouched(t *testing.T) {
	r := New(Options{})
	for _, v := range harmless {
		for where, attrs := range harmlessPlacements(v) {
			var sum Summary
			out := r.AppendAttrs(nil, attrs, nil, &sum)
			want, err := jsonCanonical(attrs)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != want || sum.Count() != 0 {
				t.Errorf("harmless %q (%s) changed:\n got %s (%v)\nwant %s", v, where, out, sum.Reasons(), want)
			}
		}
	}
}

func harmlessPlacements(v string) map[string]map[string]any {
	return map[string]map[string]any{
		"value":          {"v": v},
		"log line":       {"out": "2026-12-01T09:00:00Z INFO " + v + " done"},
		"nested":         {"a": []any{map[string]any{"b": []any{v}}}},
		"argv":           {"args": []any{"go", "--name", v}},
		"json in string": {"body": jsonText(map[string]any{"value": v})},
		"innocuous key":  {"commit": v, "digest": v, "path": v},
	}
}

func jsonCanonical(v map[string]any) (string, error) {
	// Canonical JSON sorts keys and writes no spaces; encoding/json does
	// both for these plain values, except for HTML escaping.
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// falsePositiveRates counts, per placement, how many harmless values
// artobs changes and gitleaks flags.
func falsePositiveRates(t *testing.T) map[string]*tally {
	_, d := gitleaksSamples(t)
	r := New(Options{})
	out := map[string]*tally{}
	for _, v := range harmless {
		for where, attrs := range harmlessPlacements(v) {
			var sum Summary
			r.AppendAttrs(nil, attrs, nil, &sum)
			draft := jsonText(attrs)
			if out[where] == nil {
				out[where] = &tally{}
			}
			out[where].add(sum.Count() > 0, len(d.DetectString(draft)) > 0)
		}
	}
	return out
}

// TestFastRegexesSameFindings: the derived regexes (speedUp) find what the
// rule's own regex finds, on gitleaks' samples in every placement.
func TestFastRegexesSameFindings(t *testing.T) {
	samples, _ := gitleaksSamples(t)
	ls := table().leaks
	byRule := map[string][]string{}
	var others []string
	for i, s := range samples {
		texts := []string{s.secret, "x " + s.secret + " y"}
		for _, l := range sourceLines(s) {
			texts = append(texts, l)
		}
		byRule[s.rule] = append(byRule[s.rule], texts...)
		if i%16 == 0 {
			others = append(others, texts[:4]...)
		}
	}
	others = append(others, harmless...)
	var sc leakScratch
	for ri, lr := range ls.rules {
		lr.ensure()
		for ti, text := range append(byRule[lr.id], others...) {
			if raceEnabled && (ri+ti)%3 != 0 {
				continue
			}
			want := lr.re().FindAllStringSubmatchIndex(text, -1)
			var got [][]int
			if lr.filter == nil || filterOK(lr, &sc, ls, text) {
				got = lr.fast.FindAllStringSubmatchIndex(text, -1)
			}
			prevEnd := 0
			for _, m := range got {
				m[0] = lr.matchStart(text, m[0], prevEnd)
				prevEnd = m[1]
			}
			if !slices.EqualFunc(want, got, slices.Equal) {
				t.Errorf("%s on %q: rule regex %v, derived %v", lr.id, text, want, got)
			}
		}
	}
}

func filterOK(lr *leakRule, sc *leakScratch, ls *leakSet, text string) bool {
	keywordOccurrences(ls, sc, text)
	return lr.filterMatch(sc, text)
}

func FuzzRedactGitleaksSecret(f *testing.F) {
	samples, _ := gitleaksSamples(f)
	// Secrets gitleaks finds standing alone (no name needed).
	var alone []string
	for _, s := range samples {
		if glFinds(glDetector, map[string]any{"v": s.secret}, s.secret) {
			alone = append(alone, s.secret)
		}
	}
	f.Add("the build printed  and exited", uint(16), uint(0))
	f.Add(`{"a":[1,"x"]}`, uint(9), uint(7))
	f.Add("token=\n", uint(6), uint(3))
	r := New(Options{Limits: Limits{String: 2048}})
	f.Fuzz(func(t *testing.T, text string, at, which uint) {
		s := alone[which%uint(len(alone))]
		i := int(at % uint(len(text)+1))
		for i > 0 && i < len(text) && text[i]&0xC0 == 0x80 {
			i-- // a rune boundary
		}
		v := text[:i] + " " + s + " " + text[i:]
		attrs := map[string]any{"v": v, "l": []any{"x", v}, "m": map[string]any{"k": map[string]any{"deep": v}}}
		var sum Summary
		out := r.AppendAttrs(nil, attrs, nil, &sum)
		if !json.Valid(out) || len(out) > r.lim.Total {
			t.Fatalf("invalid or unbounded output: %q", out)
		}
		if strings.Contains(string(out), s) {
			t.Fatalf("secret %q survived in %s", s, out)
		}
		assertFixedPoint(t, r, out, "fuzz gitleaks")
	})
}
