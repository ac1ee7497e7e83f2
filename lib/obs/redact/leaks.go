package redact

import (
	"math"
	"regexp"
	"regexp/syntax"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// The token rules are pattern rules: gitleaks' default configuration,
// generated from the gitleaks module go.mod pins into gitleaks_gen.go
// (`go generate`, see internal/gen; a test regenerates the table and
// compares it byte for byte, another runs every rule on gitleaks' own
// samples), followed by the rule lists other files of this package add to
// patternSources. Every regex, keyword, entropy threshold, secret group and
// allowlist is exactly gitleaks'; the table is Go data, so no binary links
// gitleaks' configuration loader, and a process that never redacts pays
// nothing for it. Updating the rules is a bump of
// github.com/zricethezav/gitleaks/v8 in go.mod and `go generate`.
//
// Matching follows gitleaks' detector: an Aho-Corasick automaton over the
// lower-cased keywords of every rule picks the few rules whose keywords occur
// in the text, and only those run their regular expression (compiled on
// first use). A match keeps gitleaks' secret group, must pass the rule's
// entropy threshold, and is dropped when a global or rule allowlist allows
// it, as gitleaks does. Differences, on purpose:
//   - rules limited to file paths (Kubernetes secret YAML, NuGet config,
//     Freemius secrets) apply to all text: drafts have no path; the
//     path-only pkcs12-file rule has nothing to match, and see
//     textOnlyInPath;
//   - allowlist conditions on paths and commits never hold: an AND list
//     with one is left out of the table, an OR list keeps its regexes and
//     stop words;
//   - "gitleaks:allow" in the text does not exempt it: drafts are input;
//   - a finding removes the whole token its secret lies in (see
//     tokenSpan), not only the secret group.

// patternRule is one rule matched by regular expression, the form of
// gitleaks' generated table and of art's own provider rules.
type patternRule struct {
	ID          string
	Description string
	Source      string // SourceGitleaks or SourceArt
	// Provider and Reference, for art's own rules: whose token format it
	// is, and where the provider publishes it.
	Provider  string
	Reference string
	// Regex is Go regexp (RE2) syntax; "" for a rule on file names only.
	Regex string
	// Path limits a gitleaks rule to files whose path matches; drafts
	// have none, so it is shown, not applied.
	Path string
	// SecretGroup is the capture group holding the secret; 0 takes the
	// first non-empty group, or the match when there is none (gitleaks').
	SecretGroup int
	Entropy     float64  // minimum Shannon entropy of the secret; 0: none
	Keywords    []string // lower case; the rule runs only on text holding one (none: always)
	Allowlists  []allowlist
}

// allowlist is the path-independent part of a gitleaks allowlist: a
// finding is allowed when one of Regexes matches its Target ("" the
// secret, "match" the whole match, "line" its line) or the secret holds one
// of StopWords (lower case); with And, every condition set must hold.
type allowlist struct {
	Description string
	And         bool
	Target      string
	Regexes     []string
	StopWords   []string
}

// patternSources are the pattern rule lists, in the order they run on a
// tie: gitleaks' table first. Another file of this package adds its list
// in an init function (art's own provider rules).
var patternSources = [][]patternRule{gitleaksRules}

// textOnlyInPath are the path-restricted rules that do not apply to drafts:
// hashicorp-tf-password matches any quoted value of a name containing
// "password" ("password_policy": "value-1234"), a secret only in Terraform
// files; art's unsafe-key rule covers the names that are secrets.
var textOnlyInPath = map[string]bool{"hashicorp-tf-password": true}

type leakRule struct {
	rule     Rule
	id       string
	src      *patternRule
	keywords []string
	cost     int // allowlist regexes and stop words: the larger, the later it runs
	once     sync.Once

	// re is the rule's regex as configured, compiled when asked for: a
	// rule with a lazy prefix runs fast, which finds the same (see
	// speedUp), and one compilation is what a cold process pays.
	re     func() *regexp.Regexp
	fast   *regexp.Regexp // re without its lazy leading prefix (see speedUp)
	filter *regexp.Regexp // a necessary condition for fast, or nil
	// filterAll is filter unanchored (the same when not windowed),
	// compiled when text that is not ASCII needs it.
	filterAll func() *regexp.Regexp
	prefix    *regexp.Regexp // the stripped prefix's character class, or nil
	maxPre    int            // its maximum repeat count
	// When every match of filter starts with one of the rule's keywords
	// (see keywordLed), filter runs only on a window of filterW bytes
	// after each occurrence of one, not over the whole text.
	windowed bool
	filterW  int
	kws      []int32 // the rule's keyword (pattern) indexes
	group    int
	entropy  float64
	// allow are the rule's allowlists, compiled when a first finding
	// needs them (generic-api-key's hold 1,500 stop words).
	allow func() []*allowCheck
	// fragments are the capture groups that hold a piece of the token, not
	// the secret: named ones (jwt-base64 names the JOSE header it starts
	// with) and repeated ones (a Teams webhook's UUID parts). With no
	// secret group configured gitleaks takes the first non-empty group as
	// the secret; when it is one of these, the whole match is removed.
	fragments []int
}

type leakSet struct {
	rules   []*leakRule
	kw      *keywordSet
	kwRules [][]int32 // keyword (pattern) index → rules having it
	always  []int32   // rules without keywords
	global  func() []*allowCheck
	rank    []int32 // rule index → position in the run order
}

func loadLeaks(t *ruleTable) *leakSet {
	// The global allowlists when a first finding needs them; each rule's
	// regexes when a text first carries one of its keywords (see ensure):
	// compiling all of them takes tens of milliseconds (hundreds under
	// -race) that a process emitting a few events should not pay up front.
	ls := &leakSet{global: sync.OnceValue(func() []*allowCheck { return compileAllowlists(gitleaksGlobal) })}
	var keywords []string
	kwIndex := map[string]int{}
	for _, set := range patternSources {
		for i := range set {
			pr := &set[i]
			ls.add(t, pr, kwIndex, &keywords)
		}
	}
	ls.kw = newKeywordSet(keywords)
	// Rules run in this order; the ones with the largest allowlists
	// (generic-api-key's) go last, so that a secret a specific rule has
	// already found skips their checks (see covered).
	order := make([]int32, len(ls.rules))
	for i := range order {
		order[i] = int32(i)
	}
	cost := func(i int32) int { return ls.rules[i].cost }
	slices.SortStableFunc(order, func(a, b int32) int { return cost(a) - cost(b) })
	ls.rank = make([]int32, len(ls.rules))
	for pos, i := range order {
		ls.rank[i] = int32(pos)
	}
	return ls
}

// add registers one pattern rule: its id in the rule table, and, when it
// has a regex for text, its keywords in the prefilter.
func (ls *leakSet) add(t *ruleTable, pr *patternRule, kwIndex map[string]int, keywords *[]string) {
	id := pr.ID
	version := gitleaksVersion
	if pr.Source != SourceGitleaks {
		version = artVersion()
	}
	info := RuleInfo{ID: id, Source: pr.Source, Version: version, Catches: pr.Description, Provider: pr.Provider, Reference: pr.Reference}
	if pr.Regex == "" || textOnlyInPath[id] {
		// Path-only rules (pkcs12-file) name files, not text; they are
		// listed so `artobs rules` shows the whole set.
		info.Catches = "(not applied: a rule for files named " + pr.Path + ") " + pr.Description
		_, _ = t.add(id, info)
		return
	}
	r, shared := t.add(id, info)
	if shared {
		// An own rule with a pattern rule's id: both match, one id counts.
		in := &t.info[r]
		in.Source += "+" + pr.Source
		if pr.Source == SourceGitleaks {
			in.Version = version
		}
		in.Catches += "; " + pr.Source + ": " + pr.Description
	}
	idx := int32(len(ls.rules))
	lr := &leakRule{rule: r, id: id, src: pr, keywords: pr.Keywords}
	for _, al := range pr.Allowlists {
		lr.cost += len(al.Regexes) + len(al.StopWords)
	}
	ls.rules = append(ls.rules, lr)
	if len(pr.Keywords) == 0 {
		ls.always = append(ls.always, idx)
		return
	}
	for _, k := range pr.Keywords {
		k = strings.ToLower(k)
		ki, ok := kwIndex[k]
		if !ok {
			ki = len(*keywords)
			kwIndex[k] = ki
			*keywords = append(*keywords, k)
			ls.kwRules = append(ls.kwRules, nil)
		}
		ls.kwRules[ki] = append(ls.kwRules[ki], idx)
		lr.kws = append(lr.kws, int32(ki))
	}
}

// keywordSet finds every occurrence of the rules' keywords (lower case,
// two bytes or more) in lower-cased text: a table indexed by a keyword's
// first two bytes holds the keywords starting with them, and each
// position of the text costs a lookup; the few positions whose two bytes
// start a keyword compare those keywords. (gitleaks' keywords have two
// bytes or more; a one-byte keyword would not be seen as the text's last
// byte.) It finds what an Aho-Corasick
// automaton over the same words finds, overlaps included, and costs a
// fraction of building one: a process redacting one draft builds it once
// (about 250 words).
type keywordSet struct {
	words  []string
	bucket *[1 << 16]uint16 // first two bytes → index into lists (0: none)
	lists  [][]int32        // keyword indexes
}

func newKeywordSet(words []string) *keywordSet {
	k := &keywordSet{words: words, bucket: new([1 << 16]uint16), lists: [][]int32{nil}}
	add := func(p uint16, i int) {
		b := k.bucket[p]
		if b == 0 {
			b = uint16(len(k.lists))
			k.bucket[p] = b
			k.lists = append(k.lists, nil)
		}
		k.lists[b] = append(k.lists[b], int32(i))
	}
	for i, w := range words {
		switch len(w) {
		case 0:
		case 1: // every pair it starts (a one-byte keyword at the very end is not seen)
			for c := range 256 {
				add(uint16(w[0])<<8|uint16(c), i)
			}
		default:
			add(uint16(w[0])<<8|uint16(w[1]), i)
		}
	}
	return k
}

// each calls fn for every occurrence of a keyword in text, by position.
func (k *keywordSet) each(text []byte, fn func(pos, pattern int32)) {
	for i := 0; i+1 < len(text); i++ {
		b := k.bucket[uint16(text[i])<<8|uint16(text[i+1])]
		if b == 0 {
			continue
		}
		for _, w := range k.lists[b] {
			word := k.words[w]
			if len(text)-i >= len(word) && string(text[i:i+len(word)]) == word {
				fn(int32(i), w)
			}
		}
	}
}

// fragmentGroups lists the capture groups of a parsed regex that are named or lie
// under a repetition (see leakRule.fragments).
func fragmentGroups(tree *syntax.Regexp) []int {
	var out []int
	var walk func(t *syntax.Regexp, repeated bool)
	walk = func(t *syntax.Regexp, repeated bool) {
		switch t.Op {
		case syntax.OpCapture:
			if repeated || t.Name != "" {
				out = append(out, t.Cap)
			}
		case syntax.OpStar, syntax.OpPlus:
			repeated = true
		case syntax.OpRepeat:
			repeated = repeated || t.Max != 1
		}
		for _, sub := range t.Sub {
			walk(sub, repeated)
		}
	}
	walk(tree, false)
	return out
}

// allowCheck is a compiled allowlist: its regexes joined into one, as
// gitleaks joins them, and its stop words in an automaton.
type allowCheck struct {
	and    bool
	target string
	re     *regexp.Regexp
	stop   *ahocorasick.Trie
}

func compileAllowlists(als []allowlist) []*allowCheck {
	var out []*allowCheck
	for _, al := range als {
		c := &allowCheck{and: al.And, target: al.Target}
		if len(al.Regexes) > 0 {
			c.re = regexp.MustCompile("(?:" + strings.Join(al.Regexes, "|") + ")")
		}
		if len(al.StopWords) > 0 {
			c.stop = ahocorasick.NewTrieBuilder().AddStrings(al.StopWords).Build()
		}
		out = append(out, c)
	}
	return out
}

// artVersion is the version of the art module in this binary, read once:
// debug.ReadBuildInfo parses the binary's module list on every call, and
// the rule table asks for every own and provider rule.
var artVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
})

// leakScratch is a walker's reusable state for the gitleaks pass.
type leakScratch struct {
	lower []byte
	seen  []uint32 // rule index → generation it was queued in
	gen   uint32
	queue []int32
	occ   []occurrence // keyword occurrences in the text being scanned
	ascii bool         // lower has the byte offsets of the text
	ctx   []byte
	view  []byte  // s with backslash escapes undone (see unescaped)
	pos   []int32 // view index → offset in s; one extra entry: len(s)
}

type occurrence struct {
	pos     int32
	pattern int32
}

// leakSpans appends the spans of gitleaks findings in s that lie within
// [lo, hi) (clipped to it, and moved back by lo): s may be a value with
// context around it. Spans from sp[cov:] (in the same coordinates) that
// already cover a finding make its checks unnecessary.
func (ls *leakSet) leakSpans(sc *leakScratch, s string, lo, hi int, sp []span, cov int) []span {
	if len(s) < 8 {
		return sp
	}
	sc.gen++
	if sc.gen == 0 || len(sc.seen) != len(ls.rules) {
		sc.seen = make([]uint32, len(ls.rules))
		sc.gen = 1
	}
	sc.queue = append(sc.queue[:0], ls.always...)
	sc.occ = sc.occ[:0]
	lower := sc.lowered(s)
	gen := sc.gen
	ls.kw.each(lower, func(pos, pattern int32) {
		sc.occ = append(sc.occ, occurrence{pos, pattern})
		for _, ri := range ls.kwRules[pattern] {
			if sc.seen[ri] != gen {
				sc.seen[ri] = gen
				sc.queue = append(sc.queue, ri)
			}
		}
	})
	slices.SortFunc(sc.queue, func(a, b int32) int { return int(ls.rank[a] - ls.rank[b]) })
	for _, ri := range sc.queue {
		sp = ls.rules[ri].find(ls, sc, s, lo, hi, sp, cov)
	}
	return sp
}

// lowered is s in lower case, as gitleaks' prefilter sees it. ASCII is
// folded in place; anything else goes through strings.ToLower as gitleaks
// does (the Kelvin sign folds to 'k').
func (sc *leakScratch) lowered(s string) []byte {
	sc.ascii = true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			sc.lower = append(sc.lower[:0], strings.ToLower(s)...)
			sc.ascii = false
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

// ensure compiles the rule on first use.
func (lr *leakRule) ensure() {
	lr.once.Do(func() {
		src := lr.src.Regex
		lr.re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
		lr.group, lr.entropy = lr.src.SecretGroup, lr.src.Entropy
		als := lr.src.Allowlists
		lr.allow = sync.OnceValue(func() []*allowCheck { return compileAllowlists(als) })
		tree, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			lr.fast = lr.re() // panics, naming the regex, as compiling it would
			return
		}
		if lr.group <= 0 {
			lr.fragments = fragmentGroups(tree)
		}
		lr.speedUp(tree, lr.src.Keywords)
		if lr.fast == nil {
			lr.fast = lr.re()
		}
	})
}

func (lr *leakRule) find(ls *leakSet, sc *leakScratch, s string, lo, hi int, sp []span, cov int) []span {
	lr.ensure()
	if lr.filter != nil && !lr.filterMatch(sc, s) {
		return sp
	}
	prevEnd := 0
	for _, m := range lr.fast.FindAllStringSubmatchIndex(s, -1) {
		a, b := lr.matchStart(s, m[0], prevEnd), m[1]
		prevEnd = b
		// gitleaks trims newlines off the match before it takes the group.
		for a < b && s[a] == '\n' {
			a++
		}
		for b > a && s[b-1] == '\n' {
			b--
		}
		sa, sb := a, b
		whole := false // the span to remove is the match, not the group
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
				whole = lr.group <= 0 && slices.Contains(lr.fragments, g)
			}
		}
		if sb <= sa || sb <= lo || sa >= hi {
			continue
		}
		secret := s[sa:sb]
		if covered(sp[cov:], max(sa, lo)-lo, min(sb, hi)-lo) {
			continue // already redacted: the checks below cannot change that
		}
		if lr.entropy != 0 && shannonEntropy(secret) <= lr.entropy {
			continue
		}
		if allowed(ls.global(), s, a, b, secret) || allowed(lr.allow(), s, a, b, secret) {
			continue
		}
		if overlapsMarker(s, sa, sb) {
			continue // redacting our own output must change nothing
		}
		ta, tb := sa, sb
		if whole {
			ta, tb = a, b
		}
		ta, tb = tokenSpan(s, ta, tb, a, b)
		sp = append(sp, span{a: max(ta, lo) - lo, b: min(tb, hi) - lo, rule: lr.rule})
	}
	return sp
}

// filterMatch reports whether the filter matches s. A windowed filter is
// tried only at the rule's keyword occurrences, anchored: every match of it
// starts at one and is at most filterW bytes long; one byte more keeps the
// context of an assertion at its end (\b, $) as it is in s. On other text
// the unanchored form runs over all of s.
func (lr *leakRule) filterMatch(sc *leakScratch, s string) bool {
	if !lr.windowed || !sc.ascii {
		return lr.filterAll().MatchString(s)
	}
	for _, o := range sc.occ {
		if !slices.Contains(lr.kws, o.pattern) {
			continue
		}
		a := int(o.pos)
		if lr.filter.MatchString(s[a:min(len(s), a+lr.filterW+1)]) {
			return true
		}
	}
	return false
}

// covered reports whether [a, b) lies inside one of the spans.
func covered(sp []span, a, b int) bool {
	for _, x := range sp {
		if x.a <= a && b <= x.b {
			return true
		}
	}
	return false
}

// allowed applies gitleaks' allowlist semantics to a finding: the target is
// the secret, the whole match or the line, by the allowlist's target; OR
// lists allow on a regex or a stop word, AND lists need every condition
// they set.
func allowed(lists []*allowCheck, s string, a, b int, secret string) bool {
	for _, al := range lists {
		target := secret
		switch al.target {
		case "match":
			target = s[a:b]
		case "line":
			ls, le := lineAround(s, a, b)
			target = s[ls:le]
		}
		regexOK := al.re != nil && target != "" && al.re.MatchString(target)
		stopOK := al.stop != nil && secret != "" && al.stop.MatchFirstString(strings.ToLower(secret)) != nil
		if al.and {
			ok := (al.re == nil || regexOK) && (al.stop == nil || stopOK)
			if ok && (al.re != nil || al.stop != nil) {
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
func (ls *leakSet) withContext(sc *leakScratch, name, v string, sp []span, cov int) []span {
	if name == "" {
		return ls.leakSpans(sc, v, 0, len(v), sp, cov)
	}
	c := append(sc.ctx[:0], '"')
	c = append(c, name...)
	c = append(c, `": "`...)
	off := len(c)
	c = append(c, v...)
	c = append(c, '"')
	sc.ctx = c
	return ls.leakSpans(sc, unsafe.String(unsafe.SliceData(c), len(c)), off, off+len(v), sp, cov)
}

// scan appends the gitleaks spans of value v named name. When v holds
// backslash escapes (JSON or a shell line quoted inside a string:
// {\"token\": \"…\"}, Go's \u003e for '>'), it is scanned a second time
// with the escapes undone, by art's rules and gitleaks', the way they would
// see that text on its own, and the spans are mapped back onto v.
func (ls *leakSet) scan(sc *leakScratch, name, v string, sp []span) []span {
	sp = ls.withContext(sc, name, v, sp, 0)
	if strings.IndexByte(v, '\\') < 0 {
		return sp
	}
	view, pos := sc.unescaped(v)
	n := len(sp)
	vs := unsafe.String(unsafe.SliceData(view), len(view))
	sp = findSecrets(vs, sp)
	sp = ls.withContext(sc, name, vs, sp, n)
	for i := n; i < len(sp); i++ {
		sp[i].a = int(pos[sp[i].a])
		sp[i].b = int(pos[sp[i].b])
	}
	return sp
}

// unescaped undoes \", \\, \/, \', \n, \r, \t, \xHH and \uXXXX in v, recording
// where each byte of the result starts in v (and, past the end, len(v)).
func (sc *leakScratch) unescaped(v string) ([]byte, []int32) {
	view, pos := sc.view[:0], sc.pos[:0]
	for i := 0; i < len(v); i++ {
		c := v[i]
		start := i
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
			case 'x': // shell $'…', C, Python
				if i+3 < len(v) && isHex(v[i+2]) && isHex(v[i+3]) {
					c = unhex(v[i+2])<<4 | unhex(v[i+3])
					i += 3
				}
			case 'u':
				if r, ok := hex4(v, i+2); ok && r != 0 && !utf16.IsSurrogate(r) {
					var b [4]byte
					n := utf8.EncodeRune(b[:], r)
					for k := range n {
						view = append(view, b[k])
						pos = append(pos, int32(start))
					}
					i += 5
					continue
				}
			}
		}
		view = append(view, c)
		pos = append(pos, int32(start))
	}
	pos = append(pos, int32(len(v)))
	sc.view, sc.pos = view, pos
	return view, pos
}

func hex4(s string, i int) (rune, bool) {
	if len(s)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// speedUp derives two cheaper regular expressions from the rule's, both
// giving exactly the rule's findings:
//
//   - fast drops a leading lazy character-class repeat such as the
//     [\w.-]{0,50}? that starts every gitleaks "semi-generic" rule. Such a
//     prefix only widens the match to the left: the leftmost match of the
//     rest starts where the rule's match puts the keyword (the lazy prefix
//     takes the shortest run, and any shorter run of the same class fits),
//     so the matches end at the same places and have the same groups. Only
//     the match start differs; matchStart recomputes it for allowlists that
//     test the whole match.
//   - filter is a leading run of the remaining concatenation, cut before its
//     first wide element (the secret itself, {10,150}): any match of fast
//     contains a match of filter, so when filter does not match there is
//     nothing to find. Most text that carries a keyword ("api" in a URL,
//     "key" in a path) fails here, after a few bytes of the automaton.
//
// Go's regexp runs a leading {0,50} repeat and a {10,150} secret as dozens
// of NFA threads at every byte; without them the rules cost what their
// keywords cost.
func (lr *leakRule) speedUp(tree *syntax.Regexp, keywords []string) {
	cat := tree
	if cat.Op != syntax.OpConcat || len(cat.Sub) < 2 {
		return
	}
	subs := cat.Sub
	if p := subs[0]; isLazyClassRepeat(p) {
		cls := &syntax.Regexp{Op: syntax.OpConcat, Flags: p.Flags, Sub: []*syntax.Regexp{
			{Op: syntax.OpBeginText}, p.Sub[0], {Op: syntax.OpEndText},
		}}
		pre, err1 := regexp.Compile(cls.String())
		rest := &syntax.Regexp{Op: syntax.OpConcat, Flags: cat.Flags, Sub: subs[1:]}
		fast, err2 := regexp.Compile(rest.String())
		if err1 == nil && err2 == nil && fast.NumSubexp() == tree.MaxCap() {
			lr.fast, lr.prefix, lr.maxPre = fast, pre, p.Max
			subs = subs[1:]
		}
	}
	end := 0
	for end < len(subs) && end < 8 {
		if w := maxWidth(subs[end]); w < 0 || w > 32 {
			break
		}
		end++
	}
	if end == 0 || end == len(subs) {
		return
	}
	f := &syntax.Regexp{Op: syntax.OpConcat, Flags: cat.Flags, Sub: subs[:end]}
	if maxWidth(f) == 0 {
		return // an assertion alone ("\b") filters nothing
	}
	fs := f.String()
	if w := maxWidth(f); w >= 0 && keywordLed(subs[0], keywords) {
		// maxWidth counts runes; a rune is at most 4 bytes, but windows
		// are used on ASCII text only, where a rune is a byte. The
		// window starts at the keyword, where a match must start: the
		// filter is anchored there.
		if anchored, err := regexp.Compile(`^(?:` + fs + `)`); err == nil {
			lr.filter, lr.windowed, lr.filterW = anchored, true, w
			lr.filterAll = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(fs) })
			return
		}
	}
	filter, err := regexp.Compile(fs)
	if err != nil {
		return
	}
	lr.filter, lr.filterAll = filter, func() *regexp.Regexp { return filter }
}

// keywordLed reports whether every string re matches starts, ignoring case,
// with one of the keywords, and re asserts nothing about what precedes it:
// then a match can only start where the prefilter saw a keyword.
func keywordLed(re *syntax.Regexp, keywords []string) bool {
	strs, ok := literals(re, 64)
	if !ok || len(strs) == 0 {
		return false
	}
	for _, s := range strs {
		s = strings.ToLower(s)
		led := false
		for _, k := range keywords {
			if strings.HasPrefix(s, strings.ToLower(k)) {
				led = true
				break
			}
		}
		if !led {
			return false
		}
	}
	return true
}

// literals expands re into the finite set of strings it matches (case
// folding gives the lower-case form, which is all keywordLed needs), or
// false if it is not such a small finite set.
func literals(re *syntax.Regexp, limit int) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}, true
	case syntax.OpCapture:
		return literals(re.Sub[0], limit)
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) >= limit {
					return nil, false
				}
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			ss, ok := literals(sub, limit)
			if !ok || len(out)+len(ss) > limit {
				return nil, false
			}
			out = append(out, ss...)
		}
		return out, true
	case syntax.OpQuest:
		ss, ok := literals(re.Sub[0], limit)
		if !ok || len(ss)+1 > limit {
			return nil, false
		}
		return append(ss, ""), true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			ss, ok := literals(sub, limit)
			if !ok || len(out)*len(ss) > limit {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range ss {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

func isLazyClassRepeat(p *syntax.Regexp) bool {
	if p.Flags&syntax.NonGreedy == 0 || len(p.Sub) != 1 {
		return false
	}
	switch p.Op {
	case syntax.OpRepeat:
		if p.Min != 0 || p.Max < 0 {
			return false
		}
	case syntax.OpStar, syntax.OpQuest:
	default:
		return false
	}
	switch p.Sub[0].Op {
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return true
	}
	return false
}

// maxWidth is the most runes re can match, or -1 if unbounded.
func maxWidth(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture:
		return maxWidth(re.Sub[0])
	case syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		w := maxWidth(re.Sub[0])
		if w < 0 || re.Max < 0 {
			return -1
		}
		return w * re.Max
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n += w
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n = max(n, w)
		}
		return n
	}
	return -1
}

// matchStart is where the rule's own regex starts the match that fast
// starts at a: the stripped lazy prefix takes the leftmost start it can,
// that is the longest run of its class (at most maxPre runes) before a,
// not reaching back into the previous match.
func (lr *leakRule) matchStart(s string, a, prevEnd int) int {
	if lr.prefix == nil {
		return a
	}
	p := a
	for n := 0; n < lr.maxPre && p > prevEnd; n++ {
		r, size := utf8.DecodeLastRuneInString(s[prevEnd:p])
		if !lr.prefix.MatchString(string(r)) {
			break
		}
		p -= size
	}
	return p
}

// lineAround is where the line holding s[a:b] starts and ends (its
// newline excluded).
func lineAround(s string, a, b int) (start, end int) {
	start = strings.LastIndexByte(s[:a], '\n') + 1
	if end = strings.IndexByte(s[b:], '\n'); end < 0 {
		return start, len(s)
	}
	return start, end + b
}
