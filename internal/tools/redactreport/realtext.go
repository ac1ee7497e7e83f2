package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/art-runtime/art/lib/obs/redact"
)

// The real-text corpus is built when the report runs, from text nobody
// wrote for a test: the `git log -p` of repositories, and go.sum files,
// package-lock.json files and YAML manifests found under directories (the
// Go module cache, node_modules of an npm install). Directories named
// testdata or fixtures are skipped, as are this repository's redaction
// fixtures (lib/obs/redact, testdata/obs, internal/tools/redactreport) and
// the document that explains redaction by example (docs/artobs.md): they
// hold fake secrets, and quote what redaction does to them, on purpose. Each draft is up to draftLines lines of one file or one commit.

const (
	draftLines = 8
	maxFile    = 2 << 20
)

func realText(o options) ([]string, error) {
	var drafts []string
	add := func(text string) {
		lines := strings.Split(text, "\n")
		for i := 0; i < len(lines) && len(drafts) < o.fpMax; i += draftLines {
			d := strings.Join(lines[i:min(len(lines), i+draftLines)], "\n")
			if strings.TrimSpace(d) != "" {
				drafts = append(drafts, d)
			}
		}
	}
	for _, repo := range o.fpGit {
		args := []string{"-C", repo, "log", "-p", "--no-color", "--no-ext-diff", fmt.Sprintf("-n%d", o.gitMax)}
		if bare, _ := exec.Command("git", "-C", repo, "rev-parse", "--is-bare-repository").Output(); strings.TrimSpace(string(bare)) == "false" {
			// A work tree can take pathspecs (a fetched snapshot is bare).
			args = append(args, "--", ".", ":(exclude)lib/obs/redact", ":(exclude)testdata/obs", ":(exclude)internal/tools/redactreport", ":(exclude)docs/artobs.md", ":(exclude)**/testdata/**")
		}
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			return nil, fmt.Errorf("-fp-git %s: git log: %v", repo, err)
		}
		add(string(out))
	}
	for _, dir := range o.fpDir {
		var files []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable parts of a cache are skipped
			}
			if d.IsDir() {
				switch d.Name() {
				case "testdata", "fixtures", "test-fixtures", ".git":
					return filepath.SkipDir
				}
				if strings.Contains(p, "gitleaks") {
					return filepath.SkipDir // its sources are secret samples
				}
				return nil
			}
			n := d.Name()
			if n == "go.sum" || n == "package-lock.json" || n == ".package-lock.json" || strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("-fp-dir %s: %v", dir, err)
		}
		sort.Strings(files)
		for _, f := range files {
			if len(drafts) >= o.fpMax {
				break
			}
			b, err := os.ReadFile(f)
			if err != nil || len(b) > maxFile || bytes.IndexByte(b, 0) >= 0 {
				continue
			}
			add(string(b))
		}
	}
	return drafts, nil
}

// sourceExt are the source files of -src.
var sourceExt = []string{".go", ".py", ".js", ".ts", ".java", ".rb", ".rs", ".c", ".sh"}

// sourceText cuts the source files under the -src directories (sorted by
// path, tests, testdata, fixtures and gitleaks' sources left out) into
// drafts of draftLines lines, up to -src-max: code as tools print it in
// diffs, errors and agent observations.
func sourceText(o options) ([]string, error) {
	var drafts []string
	for _, dir := range o.src {
		var files []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			n := d.Name()
			if d.IsDir() {
				if n == "testdata" || n == "fixtures" || n == "test" || n == "tests" || n == ".git" || strings.Contains(p, "gitleaks") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.Contains(n, "_test.") || strings.HasPrefix(n, "test_") {
				return nil
			}
			for _, e := range sourceExt {
				if strings.HasSuffix(n, e) {
					files = append(files, p)
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("-src %s: %v", dir, err)
		}
		sort.Strings(files)
		for _, f := range files {
			if len(drafts) >= o.srcMax {
				return drafts, nil
			}
			b, err := os.ReadFile(f)
			if err != nil || len(b) > maxFile || bytes.IndexByte(b, 0) >= 0 {
				continue
			}
			lines := strings.Split(string(b), "\n")
			for i := 0; i < len(lines) && len(drafts) < o.srcMax; i += draftLines {
				if d := strings.Join(lines[i:min(len(lines), i+draftLines)], "\n"); strings.TrimSpace(d) != "" {
					drafts = append(drafts, d)
				}
			}
		}
	}
	return drafts, nil
}

type fpResult struct {
	n, art, gl, both int
	// keys: drafts artobs changes only for a private key block with key
	// material in it (a key is a key, a test fixture's too; gitleaks finds
	// one only with its END line, which the draft's cut can leave out).
	keys        int
	artEx, glEx []string
	changed     []fpDraft // every draft either tool finds something in
}

// fpDraft is one real-text draft that artobs changed or gitleaks flagged.
type fpDraft struct {
	Draft    string `json:"draft"`
	Artobs   string `json:"artobs,omitempty"`   // the redacted text, when changed
	Gitleaks string `json:"gitleaks,omitempty"` // the first finding: rule and match
}

func falsePositives(drafts []string, workers int) *fpResult {
	res := &fpResult{n: len(drafts)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan string, 64)
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScanner()
			for d := range next {
				attrs := map[string]any{"text": d}
				var sum redact.Summary
				out := sc.r.AppendAttrs(nil, attrs, nil, &sum)
				raw, dec := sc.views(attrs)
				fs := append(sc.d.DetectString(raw), sc.d.DetectString(dec)...)
				mu.Lock()
				art, gl := secretRule(sum), len(fs) > 0
				var rec fpDraft
				if art {
					res.art++
					if r := sum.Reasons(); len(r) == 1 && r["private-key"] > 0 {
						res.keys++
					}
					res.artEx = append(res.artEx, changedAt(d, out, sum))
					var v struct{ Text string }
					_ = json.Unmarshal(out, &v)
					rec.Artobs = v.Text
				}
				if gl {
					res.gl++
					res.glEx = append(res.glEx, fs[0].RuleID+": "+fs[0].Match)
					rec.Gitleaks = fs[0].RuleID + ": " + fs[0].Match
				}
				if art || gl {
					rec.Draft = d
					res.changed = append(res.changed, rec)
				}
				if art && gl {
					res.both++
				}
				mu.Unlock()
			}
		}()
	}
	for _, d := range drafts {
		next <- d
	}
	close(next)
	wg.Wait()
	sort.Strings(res.artEx)
	sort.Strings(res.glEx)
	return res
}

// secretRule reports whether redaction removed something as a secret, not
// for a bound (a string cut at the size limit is no false positive).
func secretRule(sum redact.Summary) bool {
	for id := range sum.Reasons() {
		switch id {
		case "size", "depth", "collection", "binary", "cycle", "unsupported-type", "non-finite", "number-range":
		default:
			return true
		}
	}
	return false
}

// changedAt shows the redacted line and the rules.
func changedAt(d string, out []byte, sum redact.Summary) string {
	var v struct{ Text string }
	_ = json.Unmarshal(out, &v)
	for _, l := range strings.Split(v.Text, "\n") {
		if strings.Contains(l, "[REDACTED:") {
			return fmt.Sprintf("%v: %s", sum.Reasons(), strings.TrimSpace(l))
		}
	}
	return fmt.Sprintf("%v", sum.Reasons())
}

// writeFalsePositives writes the drafts either tool finds something in,
// one JSON object a line, sorted by draft.
func writeFalsePositives(path string, r *fpResult) error {
	sort.Slice(r.changed, func(i, j int) bool { return r.changed[i].Draft < r.changed[j].Draft })
	return writeLines(path, r.changed)
}

// writeLines writes one JSON object a line.
func writeLines[T any](path string, rows []T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, d := range rows {
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func printFalsePositives(w io.Writer, what string, r *fpResult, examples int) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "## false positives on "+what)
	fmt.Fprintln(tw, "drafts\tchanged by artobs\tflagged by gitleaks\tboth\t")
	mark := ""
	if r.art > r.gl {
		mark = "  ← above target"
	}
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\n", r.n, r.art, r.gl, r.both, mark)
	tw.Flush()
	fmt.Fprintf(w, "  of the drafts artobs changes, %d only for a private key block with key material (counted above; a test fixture's key is a key)\n", r.keys)
	for _, e := range r.artEx[:min(len(r.artEx), examples)] {
		fmt.Fprintf(w, "  artobs: %.200s\n", e)
	}
	for _, e := range r.glEx[:min(len(r.glEx), examples)] {
		fmt.Fprintf(w, "  gitleaks: %.200s\n", e)
	}
	fmt.Fprintln(w)
	return r.art <= r.gl
}
