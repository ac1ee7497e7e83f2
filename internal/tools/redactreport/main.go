// Command redactreport measures artobs' redaction per secret and per
// placement, with gitleaks' detector on the same drafts beside it, and
// counts false positives on real text. scripts/redact-report.sh runs it;
// docs/artobs.md gives its figures and the rule it counts by:
//
//   - A secret is stopped in a draft only when none of it is left readable:
//     no 8 consecutive characters of it (all of it, if shorter) remain in
//     the redacted output, read as its JSON strings and as base64 and
//     percent-decoded runs in them. Windows that lie inside the prefix every
//     token of the rule carries (sk-ant-api03-) or that the draft holds
//     apart from the secret do not count.
//   - gitleaks runs as its CLI runs (max decode depth 5) on each draft twice:
//     the draft as a JSON line ("raw") and the draft's strings unescaped,
//     one per line ("decoded"). A secret is found when a finding shares an
//     8-character window with it. The report gives both and their union.
//   - False positives: drafts of real text (git history, go.sum files,
//     lockfiles and manifests), each up to 8 lines; a draft counts for
//     artobs when redaction changes it and for gitleaks when either view has
//     a finding.
//
// Usage:
//
//	go run ./internal/tools/redactreport [-corpus DIR] [-generated=true] [-fp-git REPO]... [-fp-dir DIR]... [-check]
package main

import (
	"bufio"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/art-runtime/art/lib/obs/redact"
	"github.com/zricethezav/gitleaks/v8/detect"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	corpus    string
	generated bool
	fpGit     multi
	fpDir     multi
	fpMax     int
	src       multi
	srcMax    int
	srcOut    string
	gitMax    int
	check     bool
	workers   int
	examples  int
	lines     int
	fpOut     string
	missOut   string
}

func main() {
	var o options
	flag.StringVar(&o.corpus, "corpus", "", "directory with tps.jsonl (and fps.jsonl) in gitleaks' sample format; empty: generated samples only")
	flag.BoolVar(&o.generated, "generated", true, "add samples generated from gitleaks' rules and art's provider formats")
	flag.Var(&o.fpGit, "fp-git", "a git repository whose `git log -p` is real text for the false-positive count (repeatable)")
	flag.Var(&o.fpDir, "fp-dir", "a directory searched for go.sum, package-lock.json and YAML manifests (repeatable)")
	flag.IntVar(&o.fpMax, "fp-max", 20000, "at most this many real-text drafts")
	flag.Var(&o.src, "src", "a directory searched for source code (.go .py .js .ts .java .rb .rs .c .sh, no tests), measured as a second real-text set (repeatable)")
	flag.IntVar(&o.srcMax, "src-max", 20000, "at most this many source-code drafts")
	flag.StringVar(&o.srcOut, "src-out", "", "as -fp-out, for the source-code drafts")
	flag.IntVar(&o.gitMax, "git-max", 400, "commits of each -fp-git repository")
	flag.BoolVar(&o.check, "check", false, "exit 1 unless the targets hold (see docs/artobs.md)")
	flag.IntVar(&o.workers, "workers", 2, "drafts redacted and scanned at once")
	flag.IntVar(&o.examples, "examples", 12, "false-positive examples printed per tool")
	flag.IntVar(&o.lines, "lines", 4, "source lines measured per secret (its first ones)")
	flag.StringVar(&o.fpOut, "fp-out", "", "write every real-text draft artobs changes or gitleaks flags to this file, as JSON lines {draft, artobs, gitleaks}")
	flag.StringVar(&o.missOut, "miss-out", "", "write every (secret, placement) artobs leaves readable to this file, as JSON lines {set, placement, rule, secret, found_by_gitleaks, output}")
	flag.Parse()
	ok, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redactreport:", err)
		os.Exit(2)
	}
	if o.check && !ok {
		os.Exit(1)
	}
}

// secret is one sample: its value, the prefix every token of its rule
// shares, and the source lines it was published in (if any).
type secret struct {
	set, rule, value, prefix string
	lines                    []string
}

func run(o options, w io.Writer) (bool, error) {
	var secrets []secret
	if o.corpus != "" {
		s, err := loadCorpus(filepath.Join(o.corpus, "tps.jsonl"))
		if err != nil {
			return false, err
		}
		secrets = append(secrets, s...)
	}
	if o.generated {
		g, err := generatedSecrets()
		if err != nil {
			return false, err
		}
		secrets = append(secrets, g...)
	}
	if len(secrets) == 0 && len(o.fpGit)+len(o.fpDir)+len(o.src) == 0 {
		return false, errors.New("nothing to measure: give -corpus, -generated, -fp-git or -fp-dir")
	}
	for i := range secrets {
		secrets[i].lines = secrets[i].lines[:min(len(secrets[i].lines), o.lines)]
	}
	ok := true
	if len(secrets) > 0 {
		res, misses := measure(secrets, o.workers)
		if o.missOut != "" {
			if err := writeLines(o.missOut, misses); err != nil {
				return false, err
			}
		}
		ok = printRecall(w, res)
	}
	drafts, err := realText(o)
	if err != nil {
		return false, err
	}
	if len(drafts) > 0 {
		fp := falsePositives(drafts, o.workers)
		if o.fpOut != "" {
			if err := writeFalsePositives(o.fpOut, fp); err != nil {
				return false, err
			}
		}
		ok = printFalsePositives(w, "real text", fp, o.examples) && ok
	}
	code, err := sourceText(o)
	if err != nil {
		return false, err
	}
	if len(code) > 0 {
		fp := falsePositives(code, o.workers)
		if o.srcOut != "" {
			if err := writeFalsePositives(o.srcOut, fp); err != nil {
				return false, err
			}
		}
		ok = printFalsePositives(w, "source code", fp, o.examples) && ok
	}
	return ok, nil
}

// loadCorpus reads gitleaks' published samples: {"rule", "secret",
// "fixed_prefix", "contexts"} per line.
func loadCorpus(path string) ([]secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []secret
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var e struct {
			Rule        string   `json:"rule"`
			Secret      string   `json:"secret"`
			FixedPrefix string   `json:"fixed_prefix"`
			Contexts    []string `json:"contexts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if e.Secret == "" {
			return nil, fmt.Errorf("%s:%d: no secret", path, n)
		}
		out = append(out, secret{set: "gitleaks samples (" + filepath.Base(filepath.Dir(path)) + ")", rule: e.Rule, value: e.Secret, prefix: e.FixedPrefix, lines: e.Contexts})
	}
	return out, sc.Err()
}

// placements: where a secret stands in a draft. sourceLine is the
// placement of a published line, one unit per (secret, line).
var placements = []struct {
	name  string
	attrs func(s string) map[string]any
}{
	{"bare value", func(s string) map[string]any { return map[string]any{"v": s} }},
	{"bare in a log line", func(s string) map[string]any {
		return map[string]any{"out": "2026-12-01T09:00:00Z INFO upload: using " + s + " for the release"}
	}},
	{"quoted", func(s string) map[string]any { return map[string]any{"cmd": `release --with "` + s + `" --dry-run`} }},
	{"JSON string value", func(s string) map[string]any {
		b, _ := json.Marshal(map[string]any{"data": map[string]any{"value": s}})
		return map[string]any{"body": string(b)}
	}},
	{"header", func(s string) map[string]any {
		return map[string]any{"cmd": `curl -sf -H "Authorization: Bearer ` + s + `" https://api.example.com/v1/items`}
	}},
	{"URL userinfo", func(s string) map[string]any {
		return map[string]any{"remote": "https://" + s + "@git.example.com/org/repo.git"}
	}},
	{"base64 of a config", func(s string) map[string]any {
		cfg := "service:\n  endpoint: https://api.example.com\n  api_key: " + s + "\n"
		return map[string]any{"env": "CONFIG_B64=" + base64.StdEncoding.EncodeToString([]byte(cfg))}
	}},
}

const sourceLine = "source line"

type tally struct {
	n, art, glRaw, glDec, glAny, glLeak, invalid int
	leaks                                        []string // examples of gitleaks-found secrets left readable
}

type key struct{ set, placement string }

type job struct {
	s     secret
	where string
	attrs map[string]any
}

type verdict struct {
	k                       key
	art, raw, dec, validOut bool
	example                 string
	miss                    miss
}

// miss is one (secret, placement) artobs left readable.
type miss struct {
	Set       string `json:"set"`
	Placement string `json:"placement"`
	Rule      string `json:"rule"`
	Secret    string `json:"secret"`
	Gitleaks  bool   `json:"found_by_gitleaks"`
	Output    string `json:"output"`
}

func measure(secrets []secret, workers int) (map[key]*tally, []miss) {
	jobs := make(chan job, 64)
	out := make(chan verdict, 64)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScanner()
			for j := range jobs {
				out <- sc.judge(j)
			}
		}()
	}
	go func() {
		for _, s := range secrets {
			for _, p := range placements {
				jobs <- job{s, p.name, p.attrs(s.value)}
			}
			for _, l := range s.lines {
				jobs <- job{s, sourceLine, map[string]any{"file": map[string]any{"content": l}}}
			}
		}
		close(jobs)
		wg.Wait()
		close(out)
	}()
	res := map[key]*tally{}
	var misses []miss
	for v := range out {
		if !v.art {
			misses = append(misses, v.miss)
		}
		t := res[v.k]
		if t == nil {
			t = &tally{}
			res[v.k] = t
		}
		t.n++
		if v.art {
			t.art++
		}
		if v.raw {
			t.glRaw++
		}
		if v.dec {
			t.glDec++
		}
		if v.raw || v.dec {
			t.glAny++
			if !v.art {
				t.glLeak++
				if len(t.leaks) < 5 {
					t.leaks = append(t.leaks, v.example)
				}
			}
		}
		if !v.validOut {
			t.invalid++
		}
	}
	slices.SortFunc(misses, func(a, b miss) int {
		return cmp.Or(strings.Compare(a.Set, b.Set), strings.Compare(a.Placement, b.Placement),
			strings.Compare(a.Rule, b.Rule), strings.Compare(a.Secret, b.Secret))
	})
	return res, misses
}

// scanner holds one worker's redactor and detector.
type scanner struct {
	r *redact.Redactor
	d *detect.Detector
}

// detectorMu: gitleaks loads its default configuration through viper's
// global instance, which two goroutines must not do at once (a detector
// made meanwhile can lack rules).
var detectorMu sync.Mutex

func newScanner() *scanner {
	detectorMu.Lock()
	defer detectorMu.Unlock()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		panic(err)
	}
	d.MaxDecodeDepth = 5 // gitleaks' CLI default
	return &scanner{r: redact.New(redact.Options{}), d: d}
}

func (sc *scanner) judge(j job) verdict {
	v := verdict{k: key{j.s.set, j.where}}
	var sum redact.Summary
	out := sc.r.AppendAttrs(nil, j.attrs, nil, &sum)
	v.validOut = json.Valid(out)
	template := strings.Join(stringsOf(j.attrs), "\n")
	template = strings.ReplaceAll(template, j.s.value, "\x00")
	view := readable(out)
	v.art = !shares(view, j.s, template)
	raw, dec := sc.views(j.attrs)
	v.raw = sc.finds(raw, j.s, template)
	v.dec = sc.finds(dec, j.s, template)
	if !v.art {
		v.example = j.s.rule + ": " + string(out)
		v.miss = miss{j.s.set, j.where, j.s.rule, j.s.value, v.raw || v.dec, string(out)}
	}
	return v
}

// views are the draft as gitleaks is given it: a JSON line, and its strings
// unescaped one per line.
func (sc *scanner) views(attrs map[string]any) (string, string) {
	b, _ := json.Marshal(map[string]any{"apiVersion": "art/v1alpha1", "kind": "Draft", "subject": "task/1", "type": "task.output", "attrs": attrs})
	return string(b), strings.Join(stringsOf(attrs), "\n")
}

func (sc *scanner) finds(text string, s secret, template string) bool {
	for _, f := range sc.d.DetectString(text) {
		if shares(f.Secret, s, template) || shares(f.Match, s, template) {
			return true
		}
	}
	return false
}

// shares reports whether text holds a readable part of the secret: 8
// consecutive characters of it (all of it if shorter), not inside its
// fixed prefix and not found in the draft apart from it.
func shares(text string, s secret, template string) bool {
	v := s.value
	if len(v) <= 8 {
		return strings.Contains(text, v)
	}
	for i := 0; i+8 <= len(v); i++ {
		if i+8 <= len(s.prefix) {
			continue
		}
		w := v[i : i+8]
		if strings.Contains(text, w) && !strings.Contains(template, w) {
			return true
		}
	}
	return false
}

// stringsOf lists every key and string in v.
func stringsOf(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, k)
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

var markerRe = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+(?::hmac-sha256:[0-9a-f]{16})?\]`)

var encodedRun = regexp.MustCompile(`[A-Za-z0-9+/_=-]{16,}`)

// readable is what a reader of the output can read: its strings, JSON
// text inside them unescaped, and base64 and percent-encoded runs decoded.
func readable(out []byte) string {
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return string(out) // invalid output: all of it is readable
	}
	parts := stringsOf(v)
	var b strings.Builder
	for _, p := range parts {
		// A marker names its rule ("[REDACTED:aws-amazon-bedrock-api-key]"),
		// which can share a word with the secret's prefix: not readable.
		p = markerRe.ReplaceAllString(p, "\x00")
		b.WriteString(p)
		b.WriteByte('\n')
		if strings.Contains(p, `\`) {
			b.WriteString(strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\/`, `/`).Replace(p))
			b.WriteByte('\n')
		}
		if strings.Contains(p, "%") {
			if u, err := url.QueryUnescape(p); err == nil {
				b.WriteString(u)
				b.WriteByte('\n')
			}
		}
		for _, m := range encodedRun.FindAllString(p, -1) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				if d, err := enc.DecodeString(m); err == nil {
					b.Write(d)
					b.WriteByte('\n')
					break
				}
			}
		}
	}
	return b.String()
}

func pct(a, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(n))
}

// printRecall prints one table per secret set and reports whether the
// targets hold: per placement artobs ≥ the better gitleaks view, no secret
// gitleaks finds left readable, no invalid JSON.
func printRecall(w io.Writer, res map[key]*tally) bool {
	sets := map[string]bool{}
	for k := range res {
		sets[k.set] = true
	}
	names := make([]string, 0, len(sets))
	for s := range sets {
		names = append(names, s)
	}
	sort.Strings(names)
	ok := true
	order := []string{}
	for _, p := range placements {
		order = append(order, p.name)
	}
	order = append(order, sourceLine)
	for _, set := range names {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "## %s\n", set)
		fmt.Fprintln(tw, "placement\tunits\tartobs stops\tgitleaks raw\tgitleaks decoded\tgitleaks either\tfound by gitleaks, left readable by artobs\tinvalid JSON\t")
		var all []string
		for _, p := range order {
			t := res[key{set, p}]
			if t == nil {
				continue
			}
			mark := ""
			if t.art < max(t.glRaw, t.glDec) || t.glLeak > 0 || t.invalid > 0 {
				ok, mark = false, "  ← below target"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", p, t.n, pct(t.art, t.n), pct(t.glRaw, t.n), pct(t.glDec, t.n), pct(t.glAny, t.n), t.glLeak, t.invalid, mark)
			all = append(all, t.leaks...)
		}
		tw.Flush()
		for _, l := range all[:min(len(all), 8)] {
			fmt.Fprintf(w, "  left readable, found by gitleaks: %.300s\n", l)
		}
		fmt.Fprintln(w)
	}
	return ok
}
