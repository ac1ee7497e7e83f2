package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSharesCountsAnyReadablePart(t *testing.T) {
	s := secret{value: "sk-ant-api03-Zq8LmN4pR7sT1vX9Kq2LmN4pR7sT1vX9", prefix: "sk-ant-api03-"}
	for _, c := range []struct {
		out  string
		leak bool
	}{
		{`{"v":"[REDACTED:anthropic-key]"}`, false},
		{`{"v":"sk-ant-api03-[REDACTED:anthropic-key]"}`, false}, // the prefix alone says nothing
		{`{"v":"[REDACTED:anthropic-key]vX9Kq2LmN4"}`, true},     // a tail of 10 characters is a leak
		{`{"v":"` + base64.StdEncoding.EncodeToString([]byte("key: "+s.value)) + `"}`, true},
		{`{"v":"x%3D` + s.value[13:] + `"}`, true},
		{`{"body":"{\"a\":\"` + s.value + `\"}"}`, true},
		{`not json ` + s.value, true},
	} {
		if got := shares(readable([]byte(c.out)), s, ""); got != c.leak {
			t.Errorf("%s: left readable %v, want %v", c.out, got, c.leak)
		}
	}
	// A marker's rule id may share a word with the secret.
	b := secret{value: "bedrock-api-key-c2VjcmV0MTIzNDU2Nzg5MA"}
	if shares(readable([]byte(`{"v":"[REDACTED:aws-amazon-bedrock-api-key-short-lived]"}`)), b, "") {
		t.Error("a marker's rule id counted as a readable secret")
	}
	// Text the draft holds apart from the secret is not the secret's.
	if shares("https://api.example.com", secret{value: "api.example.comXYZ"}, "https://api.example.com") {
		t.Error("the draft's own text counted as the secret")
	}
}

// TestReportOnGeneratedCorpus runs the report as scripts/redact-report.sh
// does, on a corpus written in gitleaks' sample format from samples
// generated from the rules (a subset, for time), and on real text made of
// this repository's go.sum and a small git history: the targets hold, and
// the tables name every placement.
func TestReportOnGeneratedCorpus(t *testing.T) {
	gen, err := generatedSecrets()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "tps.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	step := 6
	if testing.Short() {
		step = 20
	}
	n := 0
	for i, s := range gen {
		if i%step != 0 {
			continue
		}
		n++
		b, _ := json.Marshal(map[string]any{"rule": s.rule, "secret": s.value, "fixed_prefix": s.prefix, "contexts": s.lines})
		f.Write(append(b, '\n'))
	}
	f.Close()
	// Real text: go.sum lines and a commit of manifests and code, in a
	// repository made here.
	repo := t.TempDir()
	sum, err := os.ReadFile(filepath.Join("..", "..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.sum": string(sum),
		"ci.yml": "jobs:\n  test:\n    steps:\n      - run: make\n        env:\n          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
		"app.py": "import getpass, os\npassword = getpass.getpass(\"Password: \")\napi_key = os.environ[\"API_KEY\"]\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "files"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	var out strings.Builder
	missOut := filepath.Join(dir, "miss.jsonl")
	ok, err := run(options{corpus: dir, fpGit: multi{repo}, fpMax: 2000, gitMax: 5, workers: 2, examples: 5, lines: 3, missOut: missOut}, &out)
	if err != nil {
		t.Fatal(err)
	}
	// -miss-out: one JSON line per (secret, placement) left readable, its
	// output holding a readable part of its secret.
	b, err := os.ReadFile(missOut)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Error("-miss-out is empty; the generated samples always leave some bare secrets readable")
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m miss
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("-miss-out line %q: %v", l, err)
		}
		if m.Set == "" || m.Placement == "" || m.Secret == "" || !strings.Contains(m.Output, "{") {
			t.Errorf("-miss-out row incomplete: %+v", m)
		}
	}
	t.Logf("%d secrets:\n%s", n, out.String())
	for _, p := range append([]string{sourceLine, "false positives on real text"}, placementNames()...) {
		if !strings.Contains(out.String(), p) {
			t.Errorf("report has no %q", p)
		}
	}
	if !ok {
		t.Errorf("targets do not hold:\n%s", out.String())
	}
}

func placementNames() []string {
	var ns []string
	for _, p := range placements {
		ns = append(ns, p.name)
	}
	return ns
}
