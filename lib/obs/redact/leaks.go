package redact

import (
	"math"
	"regexp"
	"runtime/debug"
	"strings"
	"unsafe"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	toml "github.com/pelletier/go-toml/v2"
	"github.com/zricethezav/gitleaks/v8/config"
)

// The token rules are gitleaks' default configuration, read from the
// gitleaks module this binary was built with: its embedded gitleaks.toml
// (config.DefaultConfig), decoded into gitleaks' own ViperConfig and turned
// into rules by gitleaks' own Translate, so every regex, keyword, entropy
// threshold, secret group and allowlist is exactly gitleaks'. Updating the
// rules is a bump of github.com/zricethezav/gitleaks/v8 in go.mod.
//
// The decoding uses go-toml instead of viper (gitleaks' loader) to keep
// viper's config-file machinery out of the binary; a test checks that both
// give the same configuration.
//
// Matching follows gitleaks' detector: an Aho-Corasick automaton over the
// lower-cased keywords of every rule picks the few rules whose keywords occur
// in the text, and only those run their regular expression. A match keeps
// gitleaks' secret group, must pass the rule's entropy threshold, and is
// dropped when a global or rule allowlist allows it, as gitleaks does.
// Differences, on purpose:
//   - rules limited to file paths (Kubernetes secret YAML, NuGet config,
//     Freemius secrets) apply to all text: drafts have no path; the
//     path-only pkcs12-file rule has nothing to match, and see
//     textOnlyInPath;
//   - "gitleaks:allow" in the text does not exempt it: drafts are input;
//   - a match is a byte span of the scanned text, so the marker replaces
//     exactly the secret group and the text around it stays.

const gitleaksModule = "github.com/zricethezav/gitleaks/v8"

// textOnlyInPath are the path-restricted rules that do not apply to drafts:
// hashicorp-tf-password matches any quoted value of a name containing
// "password" ("password_policy": "value-1234"), a secret only in Terraform
// files; art's unsafe-key rule covers the names that are secrets.
var textOnlyInPath = map[string]bool{"hashicorp-tf-password": true}

type leakRule struct {
	rule    Rule
	id      string
	re      *regexp.Regexp
	group   int
	entropy float64
	allow   []*config.Allowlist
}

type leakSet struct {
	rules   []leakRule
	trie    *ahocorasick.Trie
	kwRules [][]int32 // keyword (pattern) index → rules having it
	always  []int32   // rules without keywords
	global  []*config.Allowlist
	version string
}

func loadLeaks(t *ruleTable) *leakSet {
	var vc config.ViperConfig
	if err := toml.Unmarshal([]byte(config.DefaultConfig), &vc); err != nil {
		panic("redact: gitleaks default config: " + err.Error())
	}
	cfg, err := vc.Translate()
	if err != nil {
		panic("redact: gitleaks default config: " + err.Error())
	}
	ls := &leakSet{global: cfg.Allowlists, version: moduleVersion(gitleaksModule)}
	var keywords []string
	kwIndex := map[string]int{}
	for _, id := range cfg.OrderedRules {
		cr := cfg.Rules[id]
		if cr.Regex == nil || textOnlyInPath[id] {
			// Path-only rules (pkcs12-file) name files, not text; they
			// are listed so `artobs rules` shows the whole set.
			_, _ = t.add(id, RuleInfo{ID: id, Source: SourceGitleaks, Version: ls.version, Catches: "(not applied: a rule for files named " + cr.Path.String() + ") " + cr.Description})
			continue
		}
		r, shared := t.add(id, RuleInfo{ID: id, Source: SourceGitleaks, Version: ls.version, Catches: cr.Description})
		if shared {
			// An own rule with gitleaks' id: both match, one id counts.
			in := &t.info[r]
			in.Source = SourceArt + "+" + SourceGitleaks
			in.Version = ls.version
			in.Catches += "; gitleaks: " + cr.Description
		}
		idx := int32(len(ls.rules))
		ls.rules = append(ls.rules, leakRule{
			rule: r, id: id, re: cr.Regex, group: cr.SecretGroup,
			entropy: cr.Entropy, allow: cr.Allowlists,
		})
		if len(cr.Keywords) == 0 {
			ls.always = append(ls.always, idx)
			continue
		}
		for _, k := range cr.Keywords {
			k = strings.ToLower(k)
			ki, ok := kwIndex[k]
			if !ok {
				ki = len(keywords)
				kwIndex[k] = ki
				keywords = append(keywords, k)
				ls.kwRules = append(ls.kwRules, nil)
			}
			ls.kwRules[ki] = append(ls.kwRules[ki], idx)
		}
	}
	ls.trie = ahocorasick.NewTrieBuilder().AddStrings(keywords).Build()
	return ls
}

// moduleVersion is the version of a dependency as built into this binary.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// artVersion is the version of the art module in this binary.
func artVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// leakScratch is a walker's reusable state for the gitleaks pass.
type leakScratch struct {
	lower []byte
	seen  []uint32 // rule index → generation it was queued in
	gen   uint32
	queue []int32
	ctx   []byte
	view  []byte  // s with backslash escapes undone (see unescaped)
	pos   []int32 // view index → offset in s; one extra entry: len(s)
}

// leakSpans appends the spans of gitleaks findings in s that lie within
// [lo, hi) (clipped to it): s may be a value with context around it.
func (ls *leakSet) leakSpans(sc *leakScratch, s string, lo, hi int, sp []span) []span {
	if len(s) < 8 {
		return sp
	}
	sc.gen++
	if sc.gen == 0 || len(sc.seen) != len(ls.rules) {
		sc.seen = make([]uint32, len(ls.rules))
		sc.gen = 1
	}
	sc.queue = append(sc.queue[:0], ls.always...)
	lower := sc.lowered(s)
	gen := sc.gen
	ls.trie.Walk(lower, func(_, _, pattern int64) bool {
		for _, ri := range ls.kwRules[pattern] {
			if sc.seen[ri] != gen {
				sc.seen[ri] = gen
				sc.queue = append(sc.queue, ri)
			}
		}
		return true
	})
	for _, ri := range sc.queue {
		sp = ls.rules[ri].find(ls, s, lo, hi, sp)
	}
	return sp
}

// lowered is s in lower case, as gitleaks' prefilter sees it. ASCII is
// folded in place; anything else goes through strings.ToLower as gitleaks
// does (the Kelvin sign folds to 'k').
func (sc *leakScratch) lowered(s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			sc.lower = append(sc.lower[:0], strings.ToLower(s)...)
			return sc.lower
		}
	}
	b := append(sc.lower[:0], s...)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	sc.lower = b
	return b
}

func (lr *leakRule) find(ls *leakSet, s string, lo, hi int, sp []span) []span {
	for _, m := range lr.re.FindAllStringSubmatchIndex(s, -1) {
		a, b := m[0], m[1]
		// gitleaks trims newlines off the match before it takes the group.
		for a < b && s[a] == '\n' {
			a++
		}
		for b > a && s[b-1] == '\n' {
			b--
		}
		sa, sb := a, b
		if n := len(m) / 2; n > 1 {
			g := lr.group
			if g <= 0 {
				g = 0
				for k := 1; k < n; k++ {
					if m[2*k] >= 0 && m[2*k+1] > m[2*k] {
						g = k
						break
					}
				}
			}
			if g > 0 && g < n && m[2*g] >= 0 {
				sa, sb = max(m[2*g], a), min(m[2*g+1], b)
			}
		}
		if sb <= sa || sb <= lo || sa >= hi {
			continue
		}
		secret := s[sa:sb]
		if lr.entropy != 0 && shannonEntropy(secret) <= lr.entropy {
			continue
		}
		if allowed(ls.global, s, a, b, secret) || allowed(lr.allow, s, a, b, secret) {
			continue
		}
		if overlapsMarker(s, sa, sb) {
			continue // redacting our own output must change nothing
		}
		sp = append(sp, span{max(sa, lo), min(sb, hi), lr.rule})
	}
	return sp
}

// allowed applies gitleaks' allowlist semantics to a finding: the target is
// the secret, the whole match or the line, by the allowlist's regexTarget;
// OR lists allow on a regex or a stop word, AND lists need every condition
// they set (commit and path conditions never hold: drafts have neither).
func allowed(lists []*config.Allowlist, s string, a, b int, secret string) bool {
	for _, al := range lists {
		target := secret
		switch al.RegexTarget {
		case "match":
			target = s[a:b]
		case "line":
			ls := strings.LastIndexByte(s[:a], '\n') + 1
			le := strings.IndexByte(s[b:], '\n')
			if le < 0 {
				le = len(s)
			} else {
				le += b
			}
			target = s[ls:le]
		}
		regexOK := al.RegexAllowed(target)
		stopOK, _ := al.ContainsStopWord(secret)
		if al.MatchCondition == config.AllowlistMatchAnd {
			ok := len(al.Commits) == 0 && len(al.Paths) == 0
			if len(al.Regexes) > 0 {
				ok = ok && regexOK
			}
			if len(al.StopWords) > 0 {
				ok = ok && stopOK
			}
			if ok && (len(al.Regexes) > 0 || len(al.StopWords) > 0) {
				return true
			}
			continue
		}
		if regexOK || stopOK {
			return true
		}
	}
	return false
}

// shannonEntropy is the entropy gitleaks computes for its thresholds:
// rune frequencies over the byte length.
func shannonEntropy(data string) float64 {
	if data == "" {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for _, c := range data {
		if c < 128 {
			ascii[c]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[c]++
	}
	inv := 1.0 / float64(len(data))
	e := 0.0
	for _, n := range ascii {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range other {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}

// overlapsMarker reports whether [a, b) touches a redaction marker in s.
func overlapsMarker(s string, a, b int) bool {
	if !strings.Contains(s, markerPrefix) {
		return false
	}
	for i := strings.Index(s, markerPrefix); i >= 0 && i < b; {
		n := markerLen(s[i:])
		if n > 0 && i+n > a {
			return true
		}
		k := strings.Index(s[i+1:], markerPrefix)
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

// withContext scans value v as gitleaks sees it in a serialized draft: after
// its name (a map key, or the argv item before it), as "name": "value". Only
// spans inside the value are kept. name == "" scans v alone.
func (ls *leakSet) withContext(sc *leakScratch, name, v string, sp []span) []span {
	if name == "" {
		return ls.leakSpans(sc, v, 0, len(v), sp)
	}
	c := append(sc.ctx[:0], '"')
	c = append(c, name...)
	c = append(c, `": "`...)
	off := len(c)
	c = append(c, v...)
	c = append(c, '"')
	sc.ctx = c
	n := len(sp)
	sp = ls.leakSpans(sc, unsafe.String(unsafe.SliceData(c), len(c)), off, off+len(v), sp)
	for i := n; i < len(sp); i++ {
		sp[i].a -= off
		sp[i].b -= off
	}
	return sp
}

// scan appends the gitleaks spans of value v named name. When v holds
// backslash escapes (JSON or a shell line quoted inside a string:
// {\"token\": \"…\"}), it is scanned a second time with the escapes
// undone, the way the rules would see that text on its own, and the spans
// are mapped back onto v.
func (ls *leakSet) scan(sc *leakScratch, name, v string, sp []span) []span {
	sp = ls.withContext(sc, name, v, sp)
	if strings.IndexByte(v, '\\') < 0 {
		return sp
	}
	view, pos := sc.unescaped(v)
	n := len(sp)
	sp = ls.withContext(sc, name, unsafe.String(unsafe.SliceData(view), len(view)), sp)
	for i := n; i < len(sp); i++ {
		sp[i].a = int(pos[sp[i].a])
		sp[i].b = int(pos[sp[i].b])
	}
	return sp
}

// unescaped undoes \", \\, \/, \', \n, \r and \t in v, recording where
// each byte of the result starts in v.
func (sc *leakScratch) unescaped(v string) ([]byte, []int32) {
	view, pos := sc.view[:0], sc.pos[:0]
	for i := 0; i < len(v); i++ {
		c := v[i]
		pos = append(pos, int32(i))
		if c == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '"', '\\', '/', '\'':
				c = v[i+1]
				i++
			case 'n':
				c = '\n'
				i++
			case 'r':
				c = '\r'
				i++
			case 't':
				c = '\t'
				i++
			}
		}
		view = append(view, c)
	}
	pos = append(pos, int32(len(v)))
	sc.view, sc.pos = view, pos
	return view, pos
}
