package redact

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/jsonx"
)

// corpusEntry is one sample of testdata/obs/corpus.json.
type corpusEntry struct {
	Rule    string   `json:"rule"`
	Secret  string   `json:"secret"`
	Secrets []string `json:"secrets"`
	Text    string   `json:"text"`
	Key     string   `json:"key"`
	Glue    bool     `json:"glue"`
}

type corpus struct {
	Comment  string        `json:"comment"`
	Secrets  []corpusEntry `json:"secrets"`
	Harmless struct {
		Values []string `json:"values"`
		Keys   []string `json:"keys"`
	} `json:"harmless"`
}

func (e corpusEntry) all() []string {
	if e.Secret != "" {
		return append([]string{e.Secret}, e.Secrets...)
	}
	return e.Secrets
}

// CorpusPath is testdata/obs/corpus.json at the repository root.
func corpusPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "obs", "corpus.json")
}

func loadCorpus(t testing.TB) corpus {
	t.Helper()
	b, err := os.ReadFile(corpusPath())
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// placements puts a corpus entry everywhere a secret can hide: as a value,
// inside text, in arrays, deep in maps, as a map key, glued to other bytes,
// and for named secrets as map members, name=value text, "name": "value"
// text and argv.
func placements(e corpusEntry) map[string]map[string]any {
	p := map[string]map[string]any{}
	switch {
	case e.Key != "":
		s := e.Secret
		p["member"] = map[string]any{e.Key: s}
		p["nested member"] = map[string]any{"cfg": map[string]any{"env": []any{map[string]any{e.Key: s}}}}
		p["env set"] = map[string]any{"env": map[string]string{e.Key: s, "HOME": "/root"}}
		p["assignment"] = map[string]any{"line": "export " + e.Key + "=" + s + "; make"}
		p["colon"] = map[string]any{"line": e.Key + ": " + s}
		p["json in text"] = map[string]any{"out": `{"` + e.Key + `": "` + s + `", "ok": true}`}
		p["escaped json in text"] = map[string]any{"out": `{\"` + e.Key + `\":\"` + s + `\"}`}
		p["argv"] = map[string]any{"args": []any{"deploy", "--" + e.Key, s, "--verbose"}}
		p["argv strings"] = map[string]any{"args": []string{"--" + e.Key, s}}
		p["argv equals"] = map[string]any{"args": []any{"--" + e.Key + "=" + s}}
		p["member of typed map"] = map[string]any{"h": map[string][]string{e.Key: {s}}}
	case e.Text != "":
		p["value"] = map[string]any{"v": e.Text}
		p["in text"] = map[string]any{"v": "before " + e.Text + " after"}
		p["array"] = map[string]any{"v": []any{1, e.Text, "x"}}
		p["nested"] = map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": e.Text}}}}
		p["typed slice"] = map[string]any{"v": []string{"x", e.Text}}
	default:
		s := e.Secret
		p["value"] = map[string]any{"v": s}
		p["in text"] = map[string]any{"v": "the build printed " + s + " and exited 1"}
		p["quoted"] = map[string]any{"v": `config={"k":"` + s + `"}`}
		p["array"] = map[string]any{"v": []any{"a", s, 3}}
		p["nested"] = map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": "x " + s + " y"}}}}
		p["key"] = map[string]any{s: 1, "ok": 2}
		p["url user"] = map[string]any{"v": "https://" + s + "@github.com/org/repo.git"}
		p["typed map"] = map[string]any{"v": map[string]string{"k": s}}
		if e.Glue {
			p["glued"] = map[string]any{"v": "x" + s + "y"}
			p["glued punct"] = map[string]any{"v": "=" + s + ","}
		}
	}
	return p
}

func TestCorpusSecretsNeverLeave(t *testing.T) {
	c := loadCorpus(t)
	rules := map[string]bool{}
	for _, hmacKey := range [][]byte{nil, []byte("0123456789abcdef0123456789abcdef")} {
		r := New(Options{HMACKey: hmacKey})
		for _, e := range c.Secrets {
			rules[e.Rule] = true
			want, ok := RuleByID(e.Rule)
			if !ok {
				t.Fatalf("corpus rule %q is not a rule", e.Rule)
			}
			for name, attrs := range placements(e) {
				var sum Summary
				out := r.AppendAttrs(nil, attrs, nil, &sum)
				if !json.Valid(out) {
					t.Errorf("%s/%s: output is not valid JSON: %s", e.Rule, name, out)
				}
				for _, s := range e.all() {
					if strings.Contains(string(out), s) {
						t.Errorf("%s/%s (hmac %v): secret %q reached the output: %s", e.Rule, name, hmacKey != nil, s, out)
					}
				}
				want := want
				if e.Key == "authorization" && sum.Of(AuthHeader) > 0 {
					want = AuthHeader // "authorization: x" in text is a header
				}
				if name != "key" && name != "url user" && sum.Of(want) == 0 {
					t.Errorf("%s/%s: summary %v does not count %s; output %s", e.Rule, name, sum.Reasons(), e.Rule, out)
				}
				if sum.Count() == 0 {
					t.Errorf("%s/%s: nothing counted; output %s", e.Rule, name, out)
				}
				assertFixedPoint(t, r, out, e.Rule+"/"+name)
			}
		}
	}
	// Every token family and context rule has at least one sample.
	for _, id := range []string{"aws-access-key", "github-pat", "github-oauth", "github-app-token",
		"github-refresh-token", "gitlab-pat", "slack-token", "stripe-key", "gcp-api-key", "openai-key",
		"anthropic-key", "npm-token", "jwt", "private-key", "auth-header", "unsafe-key",
		"url-credentials", "url-query-secret"} {
		if !rules[id] {
			t.Errorf("corpus has no sample for %s", id)
		}
	}
}

func TestHarmlessSurvive(t *testing.T) {
	c := loadCorpus(t)
	r := New(Options{})
	for _, v := range c.Harmless.Values {
		attrs := map[string]any{"v": v, "list": []any{v}, "argv": []string{"--name", v}}
		var sum Summary
		out := r.AppendAttrs(nil, attrs, nil, &sum)
		want, err := jsonx.AppendCanonical(nil, map[string]any{"v": v, "list": []any{v}, "argv": []any{"--name", v}})
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(want) || sum.Count() != 0 {
			t.Errorf("harmless value %q changed:\n got %s (%v)\nwant %s", v, out, sum.Reasons(), want)
		}
	}
	for _, k := range c.Harmless.Keys {
		attrs := map[string]any{k: "value-1234", "n": map[string]any{k: 42}}
		var sum Summary
		out := r.AppendAttrs(nil, attrs, nil, &sum)
		want, _ := jsonx.AppendCanonical(nil, attrs)
		if string(out) != string(want) || sum.Count() != 0 {
			t.Errorf("harmless key %q changed:\n got %s (%v)\nwant %s", k, out, sum.Reasons(), want)
		}
		line := k + "=value-1234"
		if got := r.Text(line, &sum); got != line {
			t.Errorf("harmless assignment %q became %q", line, got)
		}
	}
}

// assertFixedPoint redacts the output again (as a Draft made from an
// envelope would be) and wants the same bytes and nothing counted.
func assertFixedPoint(t *testing.T, r *Redactor, out []byte, what string) {
	t.Helper()
	v, err := jsonx.Parse(out, "attrs", jsonx.ParseOptions{})
	if err != nil {
		t.Errorf("%s: output does not parse: %v: %s", what, err, out)
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: output is not an object: %s", what, out)
		return
	}
	var sum Summary
	again := r.AppendAttrs(nil, m, nil, &sum)
	if string(again) != string(out) || sum.Count() != 0 {
		t.Errorf("%s: redaction is not idempotent (%v):\n once  %s\n twice %s", what, sum.Reasons(), diffAt(string(out), string(again)), diffAt(string(again), string(out)))
	}
}

// diffAt shows a's text around its first difference from b.
func diffAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo, hi := max(0, i-120), min(len(a), i+80)
	return "…" + a[lo:hi] + "…"
}

// TestDocsListEveryRule keeps docs/artobs.md's rule table in step with the
// rules: every id of art's own rules has a row.
func TestDocsListEveryRule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(corpusPath()), "..", "..", "docs", "artobs.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range RuleIDs() {
		if r, _ := RuleByID(id); r.Info().Source == SourceGitleaks {
			continue // gitleaks' rules are listed by `artobs rules`
		}
		if !strings.Contains(string(b), "| `"+id+"` |") {
			t.Errorf("docs/artobs.md has no row for rule %s", id)
		}
	}
}
